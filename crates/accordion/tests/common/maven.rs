//! Shared by the tests that run a Java program against the server (HBase's
//! Java client, YCSB through our binding): whether `java` and `mvn` are
//! there, a Maven build (offline first, online after, so a warm `~/.m2`
//! needs no network and a fresh machine fetches from Maven Central), and a
//! child process run to completion with a time limit.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn have(tool: &str, arg: &str) -> bool {
    Command::new(tool).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Whether `java` and `mvn` both run; the Java tests skip, saying so, when not.
pub fn have_java_and_maven() -> bool {
    have("java", "-version") && have("mvn", "-v")
}

/// Runs `cmd` to completion or kills it after `limit`: stdout, stderr and
/// whether it succeeded.
pub fn run(cmd: &mut Command, limit: Duration) -> (String, String, bool) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (out.join().unwrap(), err.join().unwrap(), status.is_some_and(|s| s.success()))
}

/// `mvn package` in `project`: offline first, online if that fails.
pub fn build(project: &Path) {
    let (out, err, ok) =
        run(Command::new("mvn").args(["-q", "-o", "package"]).current_dir(project), Duration::from_secs(300));
    if ok {
        return;
    }
    eprintln!("offline Maven build failed, retrying online:\n{out}{err}");
    let (out, err, ok) =
        run(Command::new("mvn").args(["-q", "package"]).current_dir(project), Duration::from_secs(600));
    assert!(ok, "mvn package failed:\n{out}{err}");
}

/// The runtime classpath of a built project: its classes, then the jars
/// its `maven-dependency-plugin` listed in `target/classpath.txt`.
pub fn classpath(project: &Path) -> String {
    let jars = std::fs::read_to_string(project.join("target/classpath.txt")).expect("mvn wrote the classpath");
    format!("{}:{}", project.join("target/classes").display(), jars.trim())
}

/// The last `n` bytes of `s` (at a character boundary), for failure messages.
pub fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..=s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(s.len());
    &s[start..]
}
