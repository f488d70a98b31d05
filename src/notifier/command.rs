//! Running the `[notify] command` for one event: the argv with its placeholders replaced, the
//! event as one JSON line on stdin, in a process group of its own so that a hung notifier (and
//! the `curl` it started) is killed whole once its time is up. Nothing waits on it longer.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::jobs::insight::notify::Event;

/// The process group of the command running now (0: none), for [`kill_running`].
static RUNNING: AtomicI32 = AtomicI32::new(0);

/// Kills the command running now, with what it started: a notifier that is itself being
/// stopped must not leave a hung command behind, running for ever with nobody to time it out.
pub fn kill_running() {
    let group = RUNNING.swap(0, Ordering::SeqCst);
    if let Some(pid) = rustix::process::Pid::from_raw(group) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// What became of one command.
#[derive(Debug)]
pub enum Delivery {
    Sent(Duration),
    /// It ran and ended unsuccessfully.
    Failed(ExitStatus),
    /// Still running when its time was up: its process group was killed.
    TimedOut(Duration),
    /// It could not be started (no such program, not executable).
    NotStarted(io::Error),
}

impl Delivery {
    pub fn is_sent(&self) -> bool {
        matches!(self, Delivery::Sent(_))
    }

    /// What happened, for the notifier's own log line.
    pub fn describe(&self, program: &str) -> String {
        match self {
            Delivery::Sent(d) => format!("sent in {:.1}s", d.as_secs_f64()),
            Delivery::Failed(status) => format!("{program} ended with {status}"),
            Delivery::TimedOut(d) => format!(
                "{program} was still running after {}s and was killed (timeout_seconds in [notify])",
                d.as_secs()
            ),
            Delivery::NotStarted(e) => format!(
                "cannot run {program}: {e} (fix [notify] command: a program on PATH or an absolute path)"
            ),
        }
    }
}

/// `arg` with each placeholder replaced by the event's words, in one pass: what an event
/// brings in is never looked at again, so a title holding `{body}` stays as it is.
pub fn expand(arg: &str, e: &Event) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let tail = &rest[open..];
        let value = tail.find('}').and_then(|close| {
            let v = match &tail[1..close] {
                "kind" => e.kind.as_str(),
                "title" => e.title.as_str(),
                "body" => e.body.as_str(),
                "job_id" => e.job_id.as_str(),
                "project" => e.project.as_str(),
                "host" => e.host.as_str(),
                "key" => e.key.as_str(),
                _ => return None,
            };
            Some((v, close))
        });
        match value {
            Some((v, close)) => {
                out.push_str(v);
                rest = &tail[close + 1..];
            }
            None => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Runs `argv` for `event`, killing it after `timeout`.
pub fn deliver(argv: &[String], timeout: Duration, event: &Event) -> Delivery {
    let Some((program, args)) = argv.split_first() else {
        return Delivery::NotStarted(io::Error::other("[notify] command is empty"));
    };
    let mut cmd = Command::new(program);
    cmd.args(args.iter().map(|a| expand(a, event)))
        .stdin(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    // The command's own output goes to luzia's stderr: stdout stays luzia's one line per event.
    match io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => cmd.stdout(Stdio::from(fd)),
        Err(_) => cmd.stdout(Stdio::null()),
    };
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Delivery::NotStarted(e),
    };
    if let Some(mut stdin) = child.stdin.take() {
        let mut line = serde_json::to_vec(event).unwrap_or_default();
        line.push(b'\n');
        // On a thread of its own: a command that never reads its stdin must not hold the
        // notifier up once the pipe is full. Closing it (the thread's end) is the event's end.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&line);
        });
    }
    RUNNING.store(i32::try_from(child.id()).unwrap_or(0), Ordering::SeqCst);
    let delivery = wait(&mut child, started, timeout);
    RUNNING.store(0, Ordering::SeqCst);
    delivery
}

/// Waits for the child until `timeout`, looking more slowly as time goes on. It is reaped only
/// here, so its pid (its group's id) names nothing else while it may be killed.
fn wait(child: &mut Child, started: Instant, timeout: Duration) -> Delivery {
    let mut pause = Duration::from_millis(2);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Delivery::Sent(started.elapsed()),
            Ok(Some(status)) => return Delivery::Failed(status),
            Ok(None) => {}
            Err(e) => return Delivery::NotStarted(e),
        }
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            kill_group(child);
            let _ = child.wait();
            return Delivery::TimedOut(timeout);
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn kill_group(child: &mut Child) {
    let group = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    match group {
        Some(pid) => {
            if rustix::process::kill_process_group(pid, rustix::process::Signal::KILL).is_err() {
                let _ = child.kill();
            }
        }
        None => {
            let _ = child.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Event {
        Event::sample(chrono::Utc::now(), "box")
    }

    #[test]
    fn placeholders_are_replaced_once_and_unknown_ones_kept() {
        let mut e = sample();
        e.title = "T {body}".into();
        e.body = "B".into();
        let cases = [
            ("{title}", "T {body}"),
            ("[{kind}] {job_id}@{host}", "[test] 000000-test@box"),
            ("{nope} {", "{nope} {"),
            ("a{b{body}}", "a{bB}"),
            ("plain", "plain"),
        ];
        for (arg, want) in cases {
            assert_eq!(expand(arg, &e), want, "{arg}");
        }
    }

    #[test]
    fn the_event_arrives_on_stdin_and_the_outcome_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got.json");
        let argv: Vec<String> = vec![
            "sh".into(),
            "-c".into(),
            format!("cat > {} && test \"$1\" = test", out.display()),
            "sh".into(),
            "{kind}".into(),
        ];
        let d = deliver(&argv, Duration::from_secs(20), &sample());
        assert!(d.is_sent(), "{d:?}");
        let got: Event = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(got, sample_with_key(&got));
        let failing = deliver(&["false".into()], Duration::from_secs(20), &sample());
        assert!(matches!(failing, Delivery::Failed(_)), "{failing:?}");
        let missing = deliver(
            &["/no/such/notifier".into()],
            Duration::from_secs(1),
            &sample(),
        );
        assert!(missing.describe("/no/such/notifier").contains("cannot run"));
    }

    /// The sample as `got` was made (its key and time are of its moment).
    fn sample_with_key(got: &Event) -> Event {
        let mut e = sample();
        e.key = got.key.clone();
        e.at = got.at.clone();
        e
    }

    #[test]
    fn a_hung_command_and_what_it_started_are_killed_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild");
        let argv: Vec<String> = vec![
            "sh".into(),
            "-c".into(),
            format!("sleep 300 & echo $! > {}; wait", pidfile.display()),
        ];
        let started = Instant::now();
        let d = deliver(&argv, Duration::from_millis(500), &sample());
        assert!(matches!(d, Delivery::TimedOut(_)), "{d:?}");
        assert!(started.elapsed() < Duration::from_secs(15));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild got SIGKILL with its group; once its parent (the killed shell) is
        // gone, init reaps it: wait for that with a deadline.
        let deadline = Instant::now() + Duration::from_secs(10);
        let alive = |pid: i32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        };
        while alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(pid), "the sleep the notifier started still runs");
    }
}
