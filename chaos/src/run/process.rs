//! Ingest, slack-actions and the sweeper as processes of their own: a pool per function, one call
//! per process at a time (a Lambda instance's concurrency), and SIGKILLs in the middle of calls,
//! spread over the run like the worker's.

use crate::function::{Answer, Call, Kind};

use super::*;

/// A child and its pipes: stdin, stdout by lines, stderr.
pub(super) type Piped = (Child, ChildStdin, Lines<BufReader<ChildStdout>>, BufReader<tokio::process::ChildStderr>);

/// `exe args…` with its stdin, stdout (by lines) and stderr piped, killed when dropped: a worker
/// or function process of the harness.
pub(super) fn spawn_piped(exe: &PathBuf, args: &[&str], env: &HashMap<String, String>) -> anyhow::Result<Piped> {
    let mut child = Command::new(exe)
        .args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdin = child.stdin.take().expect("piped");
    let stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
    let stderr = BufReader::new(child.stderr.take().expect("piped"));
    Ok((child, stdin, stdout, stderr))
}

/// One function process and its pipes.
struct FunctionProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl FunctionProcess {
    async fn spawn(exe: &PathBuf, env: &HashMap<String, String>, kind: Kind) -> anyhow::Result<Self> {
        let (child, stdin, mut stdout, stderr) = spawn_piped(exe, &["function", kind.as_str()], env)?;
        tokio::spawn(async move {
            let mut lines = stderr.lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if std::env::var_os("MEDIC_CHAOS_VERBOSE").is_some() {
                    eprintln!("{}: {line}", kind.as_str());
                }
            }
        });
        match tokio::time::timeout(Duration::from_secs(60), stdout.next_line()).await {
            Ok(Ok(Some(line))) if line == READY => Ok(Self { child, stdin, stdout }),
            other => anyhow::bail!("a {} process did not start: {other:?}", kind.as_str()),
        }
    }

    async fn kill(mut self) {
        self.child.start_kill().ok();
        self.child.wait().await.ok();
    }
}

/// How a call ended.
pub(super) enum Called {
    Answered(Answer),
    /// SIGKILLed before it answered: its caller sees a failed request (a Function URL's 502) or a
    /// failed scheduled invocation.
    Killed,
}

/// Below this a tokio sleep cannot place a kill inside a call (its timer ticks in milliseconds).
const TIMER_RESOLUTION: Duration = Duration::from_millis(2);

/// The calls whose times place the next kill moment.
const RECENT_CALLS: usize = 8;

/// The processes of one function.
pub(super) struct FunctionPool {
    kind: Kind,
    exe: PathBuf,
    env: HashMap<String, String>,
    idle: Mutex<Vec<FunctionProcess>>,
    concurrency: tokio::sync::Semaphore,
    /// Kills wanted, done, and the rng drawing them.
    goal: usize,
    done: AtomicUsize,
    rng: Mutex<StdRng>,
    /// The last calls' times: kill moments are drawn below the shortest of them.
    recent: Mutex<std::collections::VecDeque<Duration>>,
    arming: Arc<Arming>,
}

impl FunctionPool {
    pub(super) fn new(
        kind: Kind,
        exe: PathBuf,
        env: HashMap<String, String>,
        concurrency: usize,
        goal: usize,
        seed: u64,
        arming: Arc<Arming>,
    ) -> Self {
        Self {
            kind,
            exe,
            env,
            idle: Mutex::default(),
            concurrency: tokio::sync::Semaphore::new(concurrency.max(1)),
            goal,
            done: AtomicUsize::new(0),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            recent: Mutex::default(),
            arming,
        }
    }

    pub(super) fn kills(&self) -> usize {
        self.done.load(Ordering::SeqCst)
    }

    pub(super) fn satisfied(&self) -> bool {
        self.kills() >= self.goal
    }

    /// `kind kills/goal`, for the settle status line.
    pub(super) fn progress(&self) -> String {
        format!("{:?} {}/{}", self.kind, self.kills(), self.goal)
    }

    /// When to kill this call, if at all: while kills are wanted and not ahead of the run's
    /// progress, a third of the calls, at a moment below the shortest of the last calls, so the
    /// call is still running. (A moving average was held up by the slow calls of the feed: in a
    /// full run the sweeper's kill moments fell after its quick later sweeps had answered, and it
    /// got 1 kill in 20 armed sweeps.)
    fn kill_after(&self) -> Option<Duration> {
        let done = self.kills();
        if done >= self.goal || self.arming.ahead(done, self.goal) {
            return None;
        }
        let shortest = self.recent.lock().unwrap().iter().min().copied().unwrap_or(TIMER_RESOLUTION);
        let mut rng = self.rng.lock().unwrap();
        let below = (shortest.as_micros() as u64).max(1);
        rng.random_bool(0.33).then(|| Duration::from_micros(rng.random_range(0..below)))
    }

    /// Makes one call on an idle process (a new one when none is idle: a cold start).
    pub(super) async fn call(&self, call: &Call) -> anyhow::Result<Called> {
        let _permit = self.concurrency.acquire().await?;
        let taken = self.idle.lock().unwrap().pop();
        let mut process = match taken {
            Some(p) => p,
            None => FunctionProcess::spawn(&self.exe, &self.env, self.kind).await?,
        };
        let kill_after = self.kill_after();
        let started = Instant::now();
        let line = serde_json::to_string(call)? + "\n";
        if process.stdin.write_all(line.as_bytes()).await.is_err() {
            process.kill().await;
            return Ok(Called::Killed);
        }
        if kill_after.is_some_and(|d| d < TIMER_RESOLUTION) {
            // A moment below the timer's resolution: a sleep that short fires after a fast call
            // (a repeated click, a refused webhook) has answered, so such calls were never killed
            // (a run got 1 slack-actions kill in 2,808 clicks). The process dies with the request
            // delivered and its answer unread: to the caller, a call that died midway.
            return Ok(self.killed(process).await);
        }
        let answered = tokio::select! {
            line = process.stdout.next_line() => match line {
                Ok(Some(line)) => serde_json::from_str::<Answer>(&line).ok(),
                _ => None,
            },
            _ = tokio::time::sleep(kill_after.unwrap_or(Duration::MAX / 4)), if kill_after.is_some() => None,
        };
        match answered {
            Some(answer) => {
                let mut recent = self.recent.lock().unwrap();
                recent.push_back(started.elapsed());
                if recent.len() > RECENT_CALLS {
                    recent.pop_front();
                }
                drop(recent);
                self.idle.lock().unwrap().push(process);
                Ok(Called::Answered(answer))
            }
            None => Ok(self.killed(process).await),
        }
    }

    /// SIGKILLs `process` in the middle of its call, and counts the kill.
    async fn killed(&self, process: FunctionProcess) -> Called {
        process.kill().await;
        self.done.fetch_add(1, Ordering::SeqCst);
        self.arming.note_kill();
        Called::Killed
    }

    /// Stops every idle process.
    pub(super) async fn shutdown(&self) {
        let idle: Vec<FunctionProcess> = std::mem::take(&mut *self.idle.lock().unwrap());
        for p in idle {
            p.kill().await;
        }
    }
}

/// An HTTP call as a Function URL hands it to the function.
pub(super) fn http_call(method: &str, uri: &str, headers: &[(&str, String)], body: String) -> Call {
    Call::Http {
        method: method.to_owned(),
        uri: uri.to_owned(),
        headers: headers.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect(),
        body,
    }
}
