//! Shared by the server's integration tests: a real `accordion server`
//! process on free ports, killed when dropped.

#![allow(dead_code, reason = "each test file uses a different part")]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A running server; killed on drop if still running.
pub struct ServerProcess {
    pub child: Child,
    pub port: u16,
    pub http_port: u16,
}

impl ServerProcess {
    pub fn start(dir: &Path, port: u16) -> ServerProcess {
        let http_port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_accordion"))
            .args(["server", "--data-dir"])
            .arg(dir)
            .args(["--thrift-addr", &format!("127.0.0.1:{port}"), "--http-addr", &format!("127.0.0.1:{http_port}")])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start accordion server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(line) if line.contains("listening") => break,
                Ok(_) => {}
                Err(_) if Instant::now() > deadline => {
                    let _ = child.kill();
                    panic!("server did not start within 60 s");
                }
                Err(_) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        panic!("server exited at start: {status}");
                    }
                }
            }
        }
        ServerProcess { child, port, http_port }
    }

    pub fn signal(&mut self, signal: &str) -> std::process::ExitStatus {
        let status = Command::new("kill").args([signal, &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success(), "kill {signal} failed");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not exit within 60 s of {signal}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
