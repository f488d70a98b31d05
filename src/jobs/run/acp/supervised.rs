//! An ACP agent run to its end by the supervisor: the session ([`client`]) beside the wait for
//! the process, and the stop signals as for any agent, with two steps first: a stop sends
//! `session/cancel` and withdraws what waits in the inbox (so nothing is left pending), then
//! the agent's group is signalled as today. When the turn has ended the agent's stdin is closed
//! and it has [`LEAVE_GRACE`] to end by itself before it is told to. The exit code is the
//! turn's: 0 when it ended as asked (`end_turn`) or at a request the operator denied, 1 for any
//! other stop reason; the agent's own
//! when it ended before its turn did (1 if that was 0: the task was not done).

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::auth::Keys;
use super::client::{self, Ending, Plan};
use super::usage::TokensFrom;
use crate::jobs::fs::files::{META_FILE_CAP, read_capped};
use crate::jobs::fs::names::PROMPT_FILE;
use crate::jobs::model::process::Recorded;
use crate::jobs::run::agents::Kind;
use crate::jobs::run::stream::JobSink;
use crate::jobs::run::stream::reader::Sink;
use crate::jobs::run::supervise;
use crate::jobs::run::supervise::{KILL_GRACE, Signals, on_stop_signal, status_code};
use crate::jobs::run::{finish, leftovers};

/// How long an agent has to end once its turn has ended and its stdin is closed.
pub const LEAVE_GRACE: Duration = Duration::from_secs(5);
/// How long a stop waits for what waits in the inbox to be withdrawn before it signals.
const WITHDRAW_WAIT: Duration = Duration::from_secs(3);
/// How long the session may take to read what is left once the agent has ended.
const DRAIN_FOR: Duration = Duration::from_secs(2);

/// An ACP agent's run: its session on its stdio, the task read from prompt.txt.
pub(in crate::jobs::run) async fn run_job(
    child: tokio::process::Child,
    (dir, log): (&Path, &File),
    plan: &supervise::Plan,
    (agent, tokens, logins): (Option<&Recorded>, TokensFrom, Keys),
    mut signals: Option<&mut Signals>,
) -> i32 {
    let prompt = match read_capped(&dir.join(PROMPT_FILE), META_FILE_CAP) {
        Ok(Some(p)) => String::from_utf8_lossy(&p).into_owned(),
        _ => {
            let _ = finish::append(dir, log, "luzia: cannot read prompt.txt\n");
            String::new()
        }
    };
    let session = Plan {
        name: Kind::of(&plan.argv).name(),
        cwd: plan.cwd.clone(),
        prompt,
        load: plan.load.clone(),
        cost_before: match (&plan.load, &plan.resumes, dir.parent()) {
            (Some(session), Some(resumes), Some(jobs)) => {
                super::usage::cost_before(jobs, resumes, session)
            }
            _ => None,
        },
        tokens,
        logins,
    };
    let code = run_to_end(child, dir, log, session, signals.as_deref_mut()).await;
    if let Some(a) = agent
        && let Some(note) = leftovers::wait_out(&a.process(), signals).await
    {
        let _ = finish::append(dir, log, &note);
    }
    code
}

/// Runs the session on `child`'s stdio (both piped) and waits for the child; its exit code.
pub async fn run_to_end(
    mut child: Child,
    dir: &Path,
    log: &File,
    plan: Plan,
    mut signals: Option<&mut Signals>,
) -> i32 {
    let (Some(stdin), Some(stdout), Ok(sink_log)) =
        (child.stdin.take(), child.stdout.take(), log.try_clone())
    else {
        let _ = finish::append(dir, log, "luzia: the agent's stdio could not be opened\n");
        return 127;
    };
    let (cancel, cancels) = mpsc::channel(1);
    let sink = JobSink::new(dir, sink_log);
    let agent = plan.name;
    let mut driver = tokio::spawn(client::run(
        stdin,
        stdout,
        sink,
        dir.to_owned(),
        plan,
        cancels,
    ));
    let pgid = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let mut ending: Option<Ending> = None;
    let mut stopped = false;
    let mut kill_at: Option<Instant> = None;
    let mut leave_by: Option<Instant> = None;
    // luzia told the agent to leave (its turn over): a signal it ends by is luzia's, not its.
    let mut told_to_leave = false;
    let status = loop {
        let stop = async {
            match signals.as_deref_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            status = child.wait() => break status_code(status),
            done = &mut driver, if ending.is_none() => {
                ending = Some(done.map_or(Ending::Gone, |(e, _)| e));
                leave_by = Some(Instant::now() + LEAVE_GRACE);
            }
            _ = stop => {
                if !stopped && ending.is_none() {
                    let (ack, acked) = oneshot::channel();
                    if cancel.try_send(ack).is_ok() {
                        let _ = tokio::time::timeout(WITHDRAW_WAIT, acked).await;
                    }
                }
                stopped = true;
                kill_at = Some(on_stop_signal(kill_at, pgid));
            }
            _ = until(kill_at) => {
                signal(pgid, rustix::process::Signal::KILL);
                kill_at = Some(Instant::now() + Duration::from_secs(3600));
            }
            _ = until(leave_by) => {
                signal(pgid, rustix::process::Signal::TERM);
                told_to_leave = true;
                leave_by = None;
                kill_at = kill_at.or(Some(Instant::now() + KILL_GRACE));
            }
        }
    };
    let ending = match ending {
        Some(e) => e,
        None => match tokio::time::timeout(DRAIN_FOR, &mut driver).await {
            Ok(done) => done.map_or(Ending::Gone, |(e, _)| e),
            Err(_) => {
                driver.abort();
                // The session never ended its sink: nothing is in flight any more.
                if let Ok(l) = log.try_clone() {
                    JobSink::new(dir, l).end();
                }
                Ending::Gone
            }
        },
    };
    // Told to leave, it ended by luzia's signal: no word of its own on how the turn went (a
    // refused session or prompt is a failure, not a kill). A requested stop keeps the signal.
    let status = if told_to_leave && !stopped && status < 0 {
        0
    } else {
        status
    };
    code((dir, log), agent, &ending, status, stopped)
}

/// The job's exit code, and a line saying why when the turn did not end as asked. The line
/// names the agent (`luzia: Codex refused session/new: ...`): the known issues tell one
/// agent's refusal from another's by it. `status` is the agent's own exit status, 0 when
/// luzia ended an agent that stayed after its turn (a refused session is a failure, not a kill).
fn code(
    (dir, log): (&Path, &File),
    agent: &str,
    ending: &Ending,
    status: i32,
    stopped: bool,
) -> i32 {
    if stopped {
        // A requested stop: how the agent ended says it (stop.json makes it killed).
        return status;
    }
    match ending {
        Ending::Turn(reason) if reason == "end_turn" || reason == super::usage::DENIED => 0,
        // The summary said why.
        Ending::Turn(_) => 1,
        Ending::Refused(said) => {
            let _ = finish::append(dir, log, &format!("luzia: {agent} refused {said}\n"));
            if status == 0 { 1 } else { status }
        }
        Ending::Gone => {
            let _ = finish::append(
                dir,
                log,
                "luzia: the agent ended before its turn did (no answer to session/prompt)\n",
            );
            if status == 0 { 1 } else { status }
        }
    }
}

async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn signal(pgid: Option<rustix::process::Pid>, sig: rustix::process::Signal) {
    if let Some(p) = pgid {
        let _ = rustix::process::kill_process_group(p, sig);
    }
}
