//! Effects on other hosts' jobs: routed to that host's `luzia` (here a recording runner in place
//! of ssh), answered with the events the local workers send, refused in read-only before any
//! remote command is run, and never turned into reads of local paths.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::*;
use crate::jobs::hitl::operator::{self, Scope};
use crate::tui::effect::ReviewOp;

const WITHIN: Duration = Duration::from_secs(10);

type Calls = Arc<Mutex<Vec<(String, Vec<String>)>>>;

struct Rig {
    _tmp: tempfile::TempDir,
    exec: Executor,
    rx: UnboundedReceiver<Event>,
    calls: Calls,
}

/// An executor on an empty root with hosts `a` and `b`, whose remote commands are recorded and
/// answered by `reply` (host, args) instead of being run.
fn rig(read_only: bool, reply: impl Fn(&str, &[String]) -> Output + Send + Sync + 'static) -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let (tx, rx) = unbounded_channel();
    let setup = Setup {
        root: tmp.path().to_owned(),
        read_only,
        config: None,
        patterns: Some(Arc::new(PatternSet::builtin())),
        known_issues: None,
        memory_percent: 100,
        cache: None,
    };
    let mut exec = Executor::new(setup, tx).unwrap();
    let calls: Calls = Arc::default();
    let recorded = calls.clone();
    let run: Runner = Arc::new(move |host, _cfg, args| {
        recorded
            .lock()
            .unwrap()
            .push((host.to_owned(), args.to_vec()));
        Ok(reply(host, args))
    });
    let hosts = ["a", "b"]
        .map(|h| (h.to_owned(), HostConfig::new(format!("ops@{h}.example"))))
        .to_vec();
    exec.run_remote_with(hosts, &run).unwrap();
    Rig {
        _tmp: tmp,
        exec,
        rx,
        calls,
    }
}

fn ok(stdout: &str) -> Output {
    Output {
        status: ExitStatus::from_raw(0),
        stdout: stdout.into(),
        stderr: vec![],
    }
}

fn failed(stderr: &str) -> Output {
    Output {
        status: ExitStatus::from_raw(1 << 8),
        stdout: vec![],
        stderr: stderr.into(),
    }
}

fn key(id: &str, host: &str) -> JobId {
    JobId::on_host(host, &JobId::parse(id).unwrap())
}

/// The next event that is not the system probe's.
fn next(rx: &mut UnboundedReceiver<Event>) -> Event {
    let deadline = Instant::now() + WITHIN;
    loop {
        match rx.try_recv() {
            Ok(Event::SystemAlerts(_) | Event::WatchMode(_) | Event::PatternsReady { .. }) => {
                continue;
            }
            Ok(ev) => return ev,
            Err(_) => {
                assert!(Instant::now() < deadline, "no event came");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

fn writing_effects(job: &JobId) -> Vec<Effect> {
    vec![
        Effect::Answer {
            job: job.clone(),
            question_id: "q1".into(),
            answer: "staging".into(),
        },
        Effect::Decide {
            job: job.clone(),
            gate_id: "g1".into(),
            approved: true,
            scope: Scope::Once,
            reason: String::new(),
        },
        Effect::Retry(job.clone()),
        Effect::Reply {
            job: job.clone(),
            text: "go on".into(),
        },
        Effect::Kill(job.clone()),
        Effect::Review {
            job: job.clone(),
            op: ReviewOp::Merge,
        },
        Effect::Dispatch {
            host: Some("b".into()),
            project: "web".into(),
            task: "t".into(),
            retry_of: None,
            agent: None,
        },
    ]
}

#[test]
fn read_only_runs_no_remote_command_at_all() {
    let mut r = rig(true, |_, _| ok(""));
    let job = key("120000-ab", "b");
    let effects = writing_effects(&job);
    let n = effects.len();
    for e in effects {
        r.exec.perform(e);
    }
    for _ in 0..n {
        match next(&mut r.rx) {
            Event::Answered { ok, message, .. } => {
                assert!(!ok);
                assert!(message.contains("read-only"), "{message}");
            }
            Event::Notice(m) => assert!(m.contains("read-only"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    // A read on the same host after them is run: everything before it was refused, not queued.
    r.exec.perform(Effect::LoadChange(job.clone()));
    assert!(matches!(next(&mut r.rx), Event::ChangeLoaded { .. }));
    let calls = r.calls.lock().unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].1[0], "diff");
}

#[test]
fn each_write_is_the_remote_cli_with_the_jobs_own_id_on_its_host() {
    let mut r = rig(false, |_, args| match args[0].as_str() {
        "answer" => ok("answered 120000-ab: staging\n"),
        "approve" => ok("approved 120000-ab at gate 'deploy'\n"),
        "retry" | "run" => ok("130000-cd\n"),
        "reply" => ok("130001-ef\n"),
        "kill" => ok("killed 120000-ab (exit:143)\n"),
        _ => ok("merged\n"),
    });
    let job = key("120000-ab", "b");
    for e in writing_effects(&job) {
        r.exec.perform(e);
    }
    match next(&mut r.rx) {
        Event::Answered {
            job: j,
            ok,
            message,
        } => {
            assert_eq!(j, job);
            assert!(ok);
            assert_eq!(message, "answered 120000-ab: staging (on b)");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(next(&mut r.rx), Event::Answered { ok: true, .. }));
    match next(&mut r.rx) {
        Event::Dispatched(Ok((Some(new), said))) => {
            assert_eq!(new, key("130000-cd", "b"));
            assert_eq!(said, "started 130000-cd@b");
        }
        other => panic!("{other:?}"),
    }
    match next(&mut r.rx) {
        Event::Dispatched(Ok((Some(new), said))) => {
            assert_eq!(new, key("130001-ef", "b"));
            assert!(
                said.contains("continues the session of 120000-ab@b"),
                "{said}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(next(&mut r.rx), Event::Notice(m) if m.contains("killed 120000-ab")));
    assert!(matches!(
        next(&mut r.rx),
        Event::Reviewed { result: Ok(_), .. }
    ));
    match next(&mut r.rx) {
        Event::Dispatched(Ok((Some(new), said))) => {
            assert_eq!(new, key("130000-cd", "b"));
            assert_eq!(said, "started 130000-cd@b on web");
        }
        other => panic!("{other:?}"),
    }
    // In the order asked, all on b, with b's own id.
    let calls = r.calls.lock().unwrap();
    let verbs: Vec<&str> = calls.iter().map(|(_, a)| a[0].as_str()).collect();
    assert_eq!(
        verbs,
        [
            "answer", "approve", "retry", "reply", "kill", "merge", "run"
        ]
    );
    assert!(calls.iter().all(|(h, _)| h == "b"));
    assert!(calls[..6].iter().all(|(_, a)| a[1] == "120000-ab"));
    assert_eq!(calls[6].1, ["run", "web", "--", "t"]);
}

#[test]
fn a_refusal_there_comes_back_as_a_failed_answer_saying_why() {
    let mut r = rig(false, |_, _| {
        failed(
            "luzia: error: question q1 of job 120000-ab was already answered by cli (ana): 'prod'\n",
        )
    });
    let job = key("120000-ab", "a");
    r.exec.perform(Effect::Answer {
        job: job.clone(),
        question_id: "q1".into(),
        answer: "staging".into(),
    });
    match next(&mut r.rx) {
        Event::Answered {
            job: j,
            ok,
            message,
        } => {
            assert_eq!(j, job);
            assert!(!ok);
            assert_eq!(
                message,
                "on a: question q1 of job 120000-ab was already answered by cli (ana): 'prod'"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// Answers and decisions (for the session too) are recorded there as given in the cockpit by
/// this operator, as the cockpit records its own.
#[test]
fn answers_and_decisions_there_say_they_were_given_in_the_cockpit_and_by_whom() {
    let mut r = rig(false, |_, _| ok("done\n"));
    let job = key("120000-ab", "b");
    let decide = |approved, scope, reason: &str| Effect::Decide {
        job: job.clone(),
        gate_id: "g1".into(),
        approved,
        scope,
        reason: reason.into(),
    };
    let effects = vec![
        writing_effects(&job).remove(0),
        decide(true, Scope::Once, ""),
        decide(true, Scope::Session, ""),
        decide(false, Scope::Once, "freeze"),
    ];
    for e in effects {
        r.exec.perform(e);
    }
    for _ in 0..4 {
        assert!(matches!(next(&mut r.rx), Event::Answered { ok: true, .. }));
    }
    let relay = [
        format!("--source={}", operator::IN_COCKPIT),
        format!("--by={}", operator::operator()),
    ];
    assert_eq!(relay[0], "--source=tui");
    let calls = r.calls.lock().unwrap();
    assert_eq!(calls.len(), 4, "{calls:?}");
    for (_, args) in calls.iter() {
        let options = args.iter().take_while(|a| *a != "--");
        let said: Vec<&String> = options.filter(|a| relay.contains(a)).collect();
        assert_eq!(said.len(), 2, "{args:?}");
    }
    assert!(calls[2].1.contains(&"--always".to_owned()), "{calls:?}");
}

/// clap's words for an option it does not know, as a luzia older than `--source` says them.
fn clap_refuses(flag: &str) -> Output {
    Output {
        status: ExitStatus::from_raw(2 << 8),
        stdout: vec![],
        stderr: format!(
            "error: unexpected argument '{flag}' found\n\n  tip: to pass '{flag}' as a value, \
             use '-- {flag}'\n\nUsage: luzia answer --question <QN> <ID> <ANSWER>...\n\n\
             For more information, try '--help'.\n"
        )
        .into(),
    }
}

/// A host whose luzia predates the relay flags still gets the answer, plain; a refusal of the
/// answer itself is not run again.
#[test]
fn an_older_luzia_there_is_answered_without_the_relay_and_a_refusal_stands() {
    let mut r = rig(false, |host, args| {
        let relayed = args.iter().any(|a| a.starts_with("--source="));
        match (host, relayed) {
            ("a", true) => clap_refuses("--source"),
            ("a", false) => ok("answered 120000-ab: staging\n"),
            _ => failed("luzia: error: question q1 of job 120000-ab was already answered\n"),
        }
    });
    for host in ["a", "b"] {
        r.exec
            .perform(writing_effects(&key("120000-ab", host)).remove(0));
    }
    // Each host has its own lane: the two come back in either order.
    let mut answered: Vec<(JobId, bool)> = (0..2)
        .map(|_| match next(&mut r.rx) {
            Event::Answered { job, ok, .. } => (job, ok),
            other => panic!("{other:?}"),
        })
        .collect();
    answered.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
    assert_eq!(
        answered,
        [
            (key("120000-ab", "a"), true),
            (key("120000-ab", "b"), false)
        ]
    );
    let calls = r.calls.lock().unwrap();
    let on = |h: &str| calls.iter().filter(|(host, _)| host == h).count();
    assert_eq!((on("a"), on("b")), (2, 1), "{calls:?}");
    let plain = calls.iter().rfind(|(h, _)| h == "a").unwrap();
    assert_eq!(
        plain.1,
        ["answer", "120000-ab", "--question=q1", "--", "staging"]
    );
}

#[test]
fn a_slow_host_holds_up_neither_another_host_nor_its_own_reads() {
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let hold = Mutex::new(hold);
    let mut r = rig(false, move |host, args| {
        if host == "a" && args[0] == "kill" {
            let _ = hold.lock().unwrap().recv_timeout(WITHIN);
        }
        ok("{\"files\": [], \"patch\": \"\", \"truncated\": false, \"notes\": []}")
    });
    r.exec.perform(Effect::Kill(key("120000-ab", "a")));
    r.exec.perform(Effect::LoadChange(key("120000-ab", "b")));
    r.exec.perform(Effect::LoadChange(key("120000-ab", "a")));
    for _ in 0..2 {
        assert!(matches!(
            next(&mut r.rx),
            Event::ChangeLoaded { change: Ok(_), .. }
        ));
    }
    release.send(()).unwrap();
    assert!(matches!(next(&mut r.rx), Event::Notice(_)));
}

#[test]
fn reads_of_local_files_leave_other_hosts_keys_out() {
    let mut r = rig(false, |_, _| ok(""));
    let remote = key("120000-ab", "a");
    r.exec.perform(Effect::LoadPrompt(remote.clone()));
    match next(&mut r.rx) {
        Event::PromptLoaded { id, text } => {
            assert_eq!(id, remote);
            assert!(text.unwrap_err().contains("not read over ssh"));
        }
        other => panic!("{other:?}"),
    }
    r.exec.perform(Effect::LoadHistory(remote.clone()));
    assert!(matches!(
        next(&mut r.rx),
        Event::HistoryLoaded {
            history: Err(_),
            ..
        }
    ));
    // Read as a local id, the key would be reported gone; left out, nothing comes back.
    r.exec.perform(Effect::ReadJobs(vec![remote.clone()]));
    let local = JobId::parse("120000-ab").unwrap();
    r.exec
        .perform(Effect::ReadJobs(vec![remote, local.clone()]));
    match next(&mut r.rx) {
        Event::JobsRead(read) => {
            let ids: Vec<&JobId> = read.iter().map(|(id, _)| id).collect();
            assert_eq!(ids, [&local]);
        }
        other => panic!("{other:?}"),
    }
    assert!(r.calls.lock().unwrap().is_empty());
}
