//! Waiting for the agent while passing on the signals that ask it to stop.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use super::KILL_GRACE;

/// SIGTERM, SIGINT and SIGHUP: each asks the supervisor to stop the agent.
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    pub(super) fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next stop signal, whichever it is.
    pub async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
            _ = self.hup.recv() => {}
        }
    }
}

/// Waits for the agent, passing a stop signal on to its group (then SIGKILL after the grace
/// period). Returns its exit code, or minus the signal that ended it.
pub(in crate::jobs::run) async fn run_to_end(
    mut child: tokio::process::Child,
    mut signals: Option<&mut Signals>,
) -> i32 {
    let pgid = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let kill_at = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let stop = async {
            match signals.as_deref_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            status = child.wait() => return status_code(status),
            _ = stop => deadline = Some(on_stop_signal(deadline, pgid)),
            _ = kill_at => {
                if let Some(p) = pgid {
                    let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
                }
                deadline = Some(tokio::time::Instant::now() + Duration::from_secs(3600));
            }
        }
    }
}

/// The first stop signal passes SIGTERM on and starts the grace period; a second one (as
/// `luzia kill` sends when its own grace is over) kills the agent's group at once.
pub(in crate::jobs::run) fn on_stop_signal(
    deadline: Option<tokio::time::Instant>,
    pgid: Option<rustix::process::Pid>,
) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    let sig = if deadline.is_some() {
        rustix::process::Signal::KILL
    } else {
        rustix::process::Signal::TERM
    };
    if let Some(p) = pgid {
        let _ = rustix::process::kill_process_group(p, sig);
    }
    match deadline {
        Some(d) => d.min(now),
        None => now + KILL_GRACE,
    }
}

pub(in crate::jobs::run) fn status_code(status: std::io::Result<std::process::ExitStatus>) -> i32 {
    match status {
        Ok(s) => s
            .code()
            .or_else(|| s.signal().map(|sig| -sig))
            .unwrap_or(-1),
        Err(_) => -1,
    }
}
