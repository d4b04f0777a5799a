//! Records the git commit the bench is built from as `BENCH_GIT_COMMIT`
//! ("unknown" outside a git checkout or without git), so that every run's
//! settings name the code that produced them. Reruns when HEAD or a ref
//! moves; uncommitted changes in the working tree are not detected.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=BENCH_GIT_COMMIT={commit}");
    // HEAD names the branch; the branch's ref (loose or packed) names the commit.
    for dir in [git(&["rev-parse", "--git-dir"]), git(&["rev-parse", "--git-common-dir"])].into_iter().flatten() {
        for f in ["HEAD", "refs/heads", "packed-refs"] {
            println!("cargo:rerun-if-changed={dir}/{f}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
