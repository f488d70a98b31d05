//! What an agent leaves behind. An agent's background children (`cmd &`, a dev server, a tool
//! run in the background) stay in its process group after it exits, and may still write to
//! output.log. The exit line must be the log's last line, so before writing it the supervisor
//! lets them finish for a moment, then stops them: SIGTERM to the group, SIGKILL after a grace
//! period. Orphans are handed to the supervisor (it is their subreaper), which reaps them.

use std::time::Duration;

use rustix::process::{Pid, Signal, WaitOptions, waitpgid};
use tokio::time::Instant;

use crate::jobs::os::process::ProcessRef;
use crate::jobs::run::supervise::Signals;

/// How long what the agent left running may take to end by itself.
pub const SETTLE: Duration = Duration::from_secs(3);
/// How long it has after SIGTERM.
pub const TERM_GRACE: Duration = Duration::from_secs(5);
/// How long SIGKILL may take to show (a process in uninterruptible sleep ends when it wakes).
const KILL_WAIT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(100);

enum Ended {
    Yes,
    TimedOut,
    /// The supervisor was asked to stop: no more waiting.
    Stopped,
}

/// Waits out, then stops, what the agent (the group leader `agent`, already reaped) left in its
/// process group. Returns a line for the log when something had to be stopped.
pub async fn wait_out(agent: &ProcessRef, mut signals: Option<&mut Signals>) -> Option<String> {
    let stopped = match ended_within(agent, SETTLE, signals.as_deref_mut()).await {
        Ended::Yes => return None,
        Ended::TimedOut => false,
        Ended::Stopped => true,
    };
    let _ = agent.signal_group(Signal::TERM);
    let how = match ended_within(agent, TERM_GRACE, signals).await {
        Ended::Yes => "SIGTERM",
        Ended::TimedOut | Ended::Stopped => {
            let _ = agent.signal_group(Signal::KILL);
            ended_within(agent, KILL_WAIT, None).await;
            "SIGKILL"
        }
    };
    let when = if stopped {
        "when the job was stopped"
    } else {
        "after it exited"
    };
    Some(format!(
        "luzia: the agent left processes running in its group {when}; they were stopped with {how}\n"
    ))
}

async fn ended_within(
    agent: &ProcessRef,
    within: Duration,
    mut signals: Option<&mut Signals>,
) -> Ended {
    let deadline = Instant::now() + within;
    loop {
        reap(agent.pid);
        if !agent.find_group().is_alive() {
            return Ended::Yes;
        }
        if Instant::now() >= deadline {
            return Ended::TimedOut;
        }
        let stop = async {
            match signals.as_deref_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop => return Ended::Stopped,
        }
    }
}

/// Reaps the group's members that were handed to this process when their parent ended: a
/// zombie stays in its group until reaped.
fn reap(pgid: u32) {
    let Some(p) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    while let Ok(Some(_)) = waitpgid(p, WaitOptions::NOHANG) {}
}
