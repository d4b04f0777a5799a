//! `Hold`: a test hook that holds every thread reaching one hook point
//! until the test releases them all, reporting the region of each arrival
//! — how the flusher's and the task monitor's tests make background work
//! stand still where they look at it.
//!
//! Thread safety: arrivals go through a channel; the release is a flag
//! under a mutex with a condition variable. Every hold is bounded, so a
//! failing test never leaves a thread held forever.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use store::hooks::{HookPoint, WriteHooks};

/// The longest a thread is held: never reached when the test works.
const HOLD_AT_MOST: Duration = Duration::from_secs(10);

pub struct Hold {
    point: HookPoint,
    arrived: Mutex<Sender<u64>>,
    released: Mutex<bool>,
    release: Condvar,
}

impl Hold {
    /// Holds at `point`; the receiver gets each arrival's region id.
    pub fn at(point: HookPoint) -> (Arc<Hold>, Receiver<u64>) {
        let (tx, rx) = mpsc::channel();
        let hold = Hold { point, arrived: Mutex::new(tx), released: Mutex::new(false), release: Condvar::new() };
        (Arc::new(hold), rx)
    }

    /// Lets every held thread go, and every later one pass.
    pub fn release_all(&self) {
        *self.released.lock().expect("release flag") = true;
        self.release.notify_all();
    }
}

impl WriteHooks for Hold {
    fn at(&self, point: HookPoint, region: u64) -> store::Result<()> {
        if point != self.point {
            return Ok(());
        }
        let _ = self.arrived.lock().expect("arrivals").send(region);
        let released = self.released.lock().expect("release flag");
        let _ = self.release.wait_timeout_while(released, HOLD_AT_MOST, |r| !*r).expect("release flag");
        Ok(())
    }
}
