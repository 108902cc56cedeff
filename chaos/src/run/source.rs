//! The Lambda event source: batches from SQS to worker processes, deleted only after the handler
//! returns, partial failures honoured, and the kills (armed at a boundary, at random, at the
//! timeout).

use super::*;

/// Which boundary the next invocation is armed at, until each has its kills.
pub(super) struct Arming {
    pub(super) per_boundary: usize,
    pub(super) random: usize,
    pub(super) kills: Mutex<BTreeMap<String, usize>>,
    pub(super) random_done: AtomicUsize,
    pub(super) last_kill: Mutex<Instant>,
    /// How far the feed is (0 to 1): the kills are spread over the run, not spent at its start.
    pub(super) progress: Mutex<f64>,
}

impl Arming {
    pub(super) fn new(per_boundary: usize, random: usize) -> Self {
        Self {
            per_boundary,
            random,
            kills: Mutex::default(),
            random_done: AtomicUsize::new(0),
            last_kill: Mutex::new(Instant::now()),
            progress: Mutex::new(0.0),
        }
    }

    pub(super) fn progress(&self) -> f64 {
        *self.progress.lock().unwrap()
    }

    pub(super) fn set_progress(&self, p: f64) {
        *self.progress.lock().unwrap() = p.clamp(0.0, 1.0);
    }

    /// True when `done` of `goal` is ahead of the feed's progress (with one to spare).
    pub(super) fn ahead(&self, done: usize, goal: usize) -> bool {
        done as f64 >= (goal as f64 * *self.progress.lock().unwrap()).ceil() + 1.0
    }

    pub(super) fn next(&self, rng: &mut StdRng) -> Option<String> {
        let done: usize = self.kills.lock().unwrap().values().map(|k| (*k).min(self.per_boundary)).sum();
        if self.ahead(done, self.per_boundary * BOUNDARIES.len()) {
            return None;
        }
        let wanted = self.missing();
        // Half the invocations run unarmed, so the pipeline also makes progress. A sync is the
        // rarest thing a batch does, so its boundary is armed whenever it still wants kills;
        // otherwise the boundary furthest from its kills, or any that wants some.
        if wanted.is_empty() || rng.random_bool(0.5) {
            None
        } else if wanted.contains(&"sync-in-flight") && rng.random_bool(0.5) {
            Some("sync-in-flight".to_owned())
        } else if rng.random_bool(0.5) {
            let kills = self.kills.lock().unwrap();
            wanted.iter().min_by_key(|b| kills.get(**b).copied().unwrap_or(0)).map(|b| (*b).to_owned())
        } else {
            Some(wanted[rng.random_range(0..wanted.len())].to_owned())
        }
    }

    /// The boundaries still short of their kills.
    pub(super) fn missing(&self) -> Vec<&'static str> {
        let kills = self.kills.lock().unwrap();
        BOUNDARIES.iter().copied().filter(|b| kills.get(*b).copied().unwrap_or(0) < self.per_boundary).collect()
    }

    pub(super) fn random_missing(&self) -> bool {
        self.random_done.load(Ordering::SeqCst) < self.random
    }

    pub(super) fn since_last_kill(&self) -> Duration {
        self.last_kill.lock().unwrap().elapsed()
    }

    pub(super) fn killed(&self, boundary: &str) {
        *self.kills.lock().unwrap().entry(boundary.to_owned()).or_default() += 1;
        self.note_kill();
    }

    /// Any kill, of any process: the run is making its kills.
    pub(super) fn note_kill(&self) {
        *self.last_kill.lock().unwrap() = Instant::now();
    }

    pub(super) fn random_kill(&self, rng: &mut StdRng) -> bool {
        let done = self.random_done.load(Ordering::SeqCst);
        done < self.random && !self.ahead(done, self.random) && rng.random_bool(0.2)
    }

    pub(super) fn satisfied(&self) -> bool {
        let kills = self.kills.lock().unwrap();
        BOUNDARIES.iter().all(|b| kills.get(*b).copied().unwrap_or(0) >= self.per_boundary)
            && self.random_done.load(Ordering::SeqCst) >= self.random
    }
}

/// A worker process and its pipes.
pub(super) struct WorkerProcess {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) stdout: Lines<BufReader<ChildStdout>>,
    pub(super) paused: mpsc::UnboundedReceiver<String>,
}

impl WorkerProcess {
    pub(super) async fn spawn(exe: &PathBuf, env: &HashMap<String, String>) -> anyhow::Result<Self> {
        let (child, stdin, mut stdout, stderr) = spawn_piped(exe, &["worker"], env)?;
        let (tx, paused) = mpsc::unbounded_channel();
        let pid = child.id().unwrap_or_default();
        tokio::spawn(async move {
            let mut lines = stderr.lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(b) = line.strip_prefix("CHAOS-PAUSED ") {
                    tx.send(b.to_owned()).ok();
                } else if let Some(key) = line.strip_prefix("CHAOS-REFRESH-SENT ") {
                    REFRESH_LOG.lock().unwrap().push((pid, true, key.to_owned()));
                } else if let Some(key) = line.strip_prefix("CHAOS-REFRESH-ENDED ") {
                    REFRESH_LOG.lock().unwrap().push((pid, false, key.to_owned()));
                } else if std::env::var_os("MEDIC_CHAOS_VERBOSE").is_some() {
                    eprintln!("worker: {line}");
                }
            }
        });
        // Init (Lambda's cold start) ends with the first `/next`; here, READY.
        let ready = tokio::time::timeout(Duration::from_secs(60), stdout.next_line()).await;
        match ready {
            Ok(Ok(Some(line))) if line == READY => Ok(Self { child, stdin, stdout, paused }),
            other => anyhow::bail!("a worker process did not start: {other:?}"),
        }
    }

    pub(super) async fn kill(mut self) {
        // SIGKILL, as Lambda stops an invocation at its timeout.
        self.child.start_kill().ok();
        self.child.wait().await.ok();
    }
}

/// One slot of the event source: receives a batch, invokes a worker process with it, deletes
/// what did not fail; kills the process at an armed boundary, at random, or at the timeout.
pub(super) struct EventSource {
    pub(super) exe: PathBuf,
    pub(super) env: HashMap<String, String>,
    pub(super) sqs: aws_sdk_sqs::Client,
    pub(super) queue_url: String,
    pub(super) timings: Timings,
    pub(super) tally: Shared,
    pub(super) arming: Arc<Arming>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) withheld: Arc<Withheld>,
}

/// The clicks' work items the `--dead-letter-clicks` experiment makes fail.
#[derive(Default)]
pub(super) struct Withheld {
    pub(super) quota: Mutex<usize>,
    pub(super) ids: Mutex<BTreeSet<String>>,
    pub(super) receives: AtomicUsize,
}

impl Withheld {
    /// True when `m` is to fail: one already chosen, or a click's item while the quota lasts.
    pub(super) fn takes(&self, m: &aws_sdk_sqs::types::Message) -> bool {
        let id = m.message_id().unwrap_or_default().to_owned();
        let mut ids = self.ids.lock().unwrap();
        let chosen = ids.contains(&id) || {
            let body: serde_json::Value = serde_json::from_str(m.body().unwrap_or("{}")).unwrap_or_default();
            let click =
                body["kind"] == "requested" && body["requestedAction"].as_str().is_some_and(|a| a != "refresh" && a != "hard_refresh");
            let mut quota = self.quota.lock().unwrap();
            let take = click && *quota > 0;
            if take {
                *quota -= 1;
                eprintln!("chaos: experiment: the work item of a click ({}) will fail until it dead-letters", body["requestedAction"]);
                ids.insert(id);
            }
            take
        };
        if chosen {
            self.receives.fetch_add(1, Ordering::SeqCst);
        }
        chosen
    }
}

pub(super) enum Ended {
    Answered(SqsBatchResponse),
    Killed(String),
}

impl EventSource {
    pub(super) async fn run(self, mut rng: StdRng) {
        let mut process: Option<WorkerProcess> = None;
        while !self.stop.load(Ordering::SeqCst) {
            let mut worker = match process.take() {
                Some(w) => w,
                None => match WorkerProcess::spawn(&self.exe, &self.env).await {
                    Ok(w) => w,
                    Err(e) => {
                        eprintln!("chaos: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                },
            };
            let mut messages = self.receive().await;
            // Withheld: neither handled nor deleted, so they come back after the visibility
            // timeout with one more receive, as after a failed invocation.
            messages.retain(|m| !self.withheld.takes(m));
            if messages.is_empty() {
                process = Some(worker);
                continue;
            }
            let mut event = SqsEvent::default();
            event.records = messages.iter().map(record).collect();
            let arm = self.arming.next(&mut rng);
            // A random moment of the invocation: most batches take a few hundred milliseconds,
            // so the moment is drawn from those, not from the whole timeout.
            let random_after =
                (arm.is_none() && self.arming.random_kill(&mut rng)).then(|| Duration::from_millis(rng.random_range(0..250)));
            self.tally.lock().unwrap().invocations += 1;
            let line = serde_json::to_string(&Invocation { arm, event }).expect("serialisable") + "\n";
            if worker.stdin.write_all(line.as_bytes()).await.is_err() {
                worker.kill().await;
                continue;
            }
            let ended = tokio::select! {
                answer = worker.stdout.next_line() => match answer {
                    Ok(Some(a)) => serde_json::from_str(&a).map(Ended::Answered).unwrap_or_else(|_| Ended::Killed("bad-answer".into())),
                    _ => Ended::Killed("crashed".into()),
                },
                Some(boundary) = worker.paused.recv() => Ended::Killed(boundary),
                _ = tokio::time::sleep(self.timings.timeout) => Ended::Killed("timeout".into()),
                _ = tokio::time::sleep(random_after.unwrap_or(Duration::MAX / 4)), if random_after.is_some() => Ended::Killed("random".into()),
            };
            match ended {
                Ended::Answered(response) => {
                    let failed: BTreeSet<String> = response.batch_item_failures.into_iter().map(|f| f.item_identifier).collect();
                    for m in messages.iter().filter(|m| !failed.contains(m.message_id.as_deref().unwrap_or(""))) {
                        if let Some(handle) = &m.receipt_handle {
                            self.sqs.delete_message().queue_url(&self.queue_url).receipt_handle(handle).send().await.ok();
                        }
                    }
                    process = Some(worker);
                }
                Ended::Killed(why) => {
                    // Nothing of the batch is deleted: SQS offers it again after the visibility timeout.
                    worker.kill().await;
                    if why == "random" {
                        self.arming.random_done.fetch_add(1, Ordering::SeqCst);
                    }
                    if BOUNDARIES.contains(&why.as_str()) {
                        self.arming.killed(&why);
                    }
                    *self.tally.lock().unwrap().kills.entry(why).or_default() += 1;
                }
            }
        }
        if let Some(w) = process {
            w.kill().await;
        }
    }

    pub(super) async fn receive(&self) -> Vec<aws_sdk_sqs::types::Message> {
        self.sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(BATCH_SIZE)
            .wait_time_seconds(RECEIVE_WAIT_SECS)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .ok()
            .and_then(|o| o.messages)
            .unwrap_or_default()
    }
}

/// An SQS record as Lambda delivers it.
pub(super) fn record(m: &aws_sdk_sqs::types::Message) -> SqsMessage {
    let mut r = SqsMessage::default();
    r.message_id = m.message_id.clone();
    r.receipt_handle = m.receipt_handle.clone();
    r.body = m.body.clone();
    r.attributes = m.attributes.clone().unwrap_or_default().into_iter().map(|(k, v)| (k.as_str().to_owned(), v)).collect();
    r
}
