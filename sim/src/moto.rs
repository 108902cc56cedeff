//! A real moto_server (SQS, DynamoDB, Secrets Manager on 127.0.0.1) for integration tests: one
//! per test binary, started on first use on a free loopback port, stopped when the test process
//! ends. It lives here, beside the Argo CD simulator, so every test crate uses the same launcher.
//!
//! The server comes from the project's virtualenv (`make venv`). A missing binary fails the tests
//! with that instruction: they are never skipped.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A running moto_server.
///
/// It runs under a small shell watchdog that reads its standard input: when that pipe closes
/// (this value is dropped, or the test process exits or is killed, since a `static` is never
/// dropped) the watchdog stops the server. So no server outlives its tests.
pub struct MotoServer {
    pub url: String,
    watchdog: Child,
    stdin: Option<ChildStdin>,
    log: PathBuf,
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.watchdog.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The moto_server of the virtualenv, or `MOTO_SERVER` if set.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("MOTO_SERVER") {
        return PathBuf::from(path);
    }
    crate::workspace_root().join(".venv/bin/moto_server")
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding a free loopback port");
    listener.local_addr().expect("the bound port").port()
}

/// True once the server answers an HTTP request.
fn answers(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"GET /moto-api/data.json HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.")
}

impl MotoServer {
    /// Starts a server and waits until it answers; panics with its output if it does not.
    pub fn start() -> Self {
        Self::start_program(binary())
    }

    /// Starts `binary` (moto_server, or a launcher taking the same `-H`/`-p` arguments) and
    /// waits until it answers; panics with its output if it does not.
    pub fn start_program(binary: PathBuf) -> Self {
        assert!(
            binary.is_file(),
            "moto_server not found at {}: run `make venv` (scripts/python-env.sh) to install it into .venv; \
             the AWS adapter tests need it and are never skipped",
            binary.display()
        );
        let mut last_log = String::new();
        for _ in 0..3 {
            let port = free_port();
            let log = std::env::temp_dir().join(format!("medic-moto-{}-{port}.log", std::process::id()));
            let mut watchdog = Command::new("sh")
                .arg("-c")
                .arg(r#""$0" -H 127.0.0.1 -p "$1" >"$2" 2>&1 & pid=$!; read -r _; kill "$pid" 2>/dev/null; wait "$pid""#)
                .arg(&binary)
                .arg(port.to_string())
                .arg(&log)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting sh to run moto_server");
            let stdin = watchdog.stdin.take();
            let server = MotoServer { url: format!("http://127.0.0.1:{port}"), watchdog, stdin, log: log.clone() };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if answers(port) {
                    return server;
                }
                last_log = std::fs::read_to_string(&log).unwrap_or_default();
                if last_log.contains("Address already in use") || last_log.contains("Traceback") {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            drop(server); // stops it; then try another port
        }
        panic!("moto_server ({}) did not answer within 30 s; its output:\n{last_log}", binary.display());
    }
}

static MOTO: OnceLock<MotoServer> = OnceLock::new();

/// This test binary's server, started on first use.
pub fn moto() -> &'static MotoServer {
    MOTO.get_or_init(MotoServer::start)
}

/// A name no other test of this binary uses (tables and queues share one server).
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
