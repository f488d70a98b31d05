//! Questions and approval gates through the real binary: operators racing on one question,
//! an answer racing the agent's timeout, a real agent script talking to the operator's CLI,
//! the operator commands in detail, hostile question files, and the agent's own commands.
//!
//! Every process is real and every directory is on disk; every child is killed and reaped on
//! the way out (also when an assertion fails). Nothing here asserts how fast anything is: the
//! only clocks are hang guards, and the timeout race spreads its sends around the deadline and
//! checks that whichever side wins, exactly one answer stands.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The isolated environment of `Sandbox::luzia_std`, for commands that are not luzia itself
/// (a shell that execs it) and for the agent commands, which must not inherit a job directory.
fn isolate(cmd: &mut Command, sb: &Sandbox) {
    cmd.env_remove("LUZIA_JOBS_DIR")
        .env_remove("LUZIA_CONFIG")
        .env_remove("LUZIA_JOB_DIR")
        .env("XDG_CONFIG_HOME", &sb.xdg)
        .env("NO_COLOR", "1")
        .env("TZ", "UTC");
}

/// `luzia <args>` for the agent side: no `--jobs-dir`, no inherited LUZIA_JOB_DIR.
fn agent(sb: &Sandbox, args: &[&str]) -> Command {
    let mut cmd = Command::new(LUZIA);
    isolate(&mut cmd, sb);
    cmd.args(args);
    cmd
}

/// `luzia --jobs-dir ROOT <args>`, run as `USER=operator`.
fn operator(sb: &Sandbox, args: &[&str]) -> Command {
    let mut cmd = sb.luzia_std();
    cmd.env_remove("LUZIA_JOB_DIR")
        .env("USER", "operator")
        .args(args);
    cmd
}

/// A finished process.
#[derive(Debug)]
struct Done {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// A child whose stdout and stderr are drained on threads (so it never blocks on a full pipe),
/// killed and reaped if the test ends before it does.
struct Running {
    guard: ChildGuard,
    out: Option<JoinHandle<Vec<u8>>>,
    err: Option<JoinHandle<Vec<u8>>>,
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

impl Running {
    fn spawn(cmd: &mut Command) -> Running {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn luzia");
        let out = drain(child.stdout.take().unwrap());
        let err = drain(child.stderr.take().unwrap());
        Running {
            guard: ChildGuard::new(child),
            out: Some(out),
            err: Some(err),
        }
    }

    /// Whether this process, or one under it (strace's child), holds open a file of no name
    /// yet in `dir`: an answer written and about to be linked (`O_TMPFILE`; /proc shows it as
    /// `DIR/#INODE (deleted)`).
    fn holds_unnamed_file_in(&self, dir: &Path) -> bool {
        let me = self.guard.id();
        std::iter::once(me).chain(children_of(me)).any(|pid| {
            fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|fd| fs::read_link(fd.path()).ok())
                .any(|to| {
                    to.parent() == Some(dir)
                        && to.to_string_lossy().ends_with(" (deleted)")
                        && to
                            .file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with('#'))
                })
        })
    }

    fn alive(&mut self) -> bool {
        self.guard.child().try_wait().expect("try_wait").is_none()
    }

    /// Waits for the process to end by itself (the hang guard kills it and fails the test).
    fn finish(mut self, what: &str) -> Done {
        let status = self.guard.wait_within(HANG_GUARD, what);
        let text = |h: Option<JoinHandle<Vec<u8>>>| {
            String::from_utf8_lossy(&h.unwrap().join().unwrap()).into_owned()
        };
        Done {
            code: status.code(),
            stdout: text(self.out.take()),
            stderr: text(self.err.take()),
        }
    }
}

/// Runs a command to its end, within the hang guard.
fn run(cmd: &mut Command, what: &str) -> Done {
    Running::spawn(cmd).finish(what)
}

/// Polls `cond` until it holds; past the hang guard the test fails, saying what it waited for.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG_GUARD;
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A job whose agent is `pid`: meta.json and a pid file. Returns its directory.
fn live_job(sb: &Sandbox, id: &str, project: &str, pid: u32) -> PathBuf {
    let meta = json!({"id": id, "project": project, "task": "answer me", "started": now_rfc3339()});
    sb.write(id, "meta.json", meta.to_string());
    sb.write(id, "pid", format!("{pid}\n"));
    sb.job_dir(id)
}

/// Writes `dir/name` the way the protocol says (temporary name, then rename), so that no
/// luzia process under test ever sees half of it.
fn put_atomic(dir: &Path, name: &str, body: &str) {
    let tmp = dir.join(format!(".{name}.by-test"));
    fs::write(&tmp, body).unwrap();
    fs::rename(&tmp, dir.join(name)).unwrap();
}

fn choice_question(id: &str, text: &str, options: &[&str]) -> String {
    json!({"id": id, "type": "choice", "question": text, "options": options,
           "context": "ctx", "asked_at": now_rfc3339()})
    .to_string()
}

/// `*.tmp` files in a directory (a publisher that died or forgot to clean up).
fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

fn read_json(path: &Path) -> Value {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "{} is not JSON ({e}): {:?}",
            path.display(),
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// history.jsonl, one parsed object per line.
fn history(dir: &Path) -> Vec<Value> {
    let text = fs::read_to_string(dir.join("history.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad history line {l:?}: {e}")))
        .collect()
}

/// `luzia questions --json`, parsed.
fn questions_json(sb: &Sandbox, extra: &[&str]) -> Vec<Value> {
    let out = sb
        .luzia()
        .args(["questions", "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    match serde_json::from_slice(&out.stdout) {
        Ok(Value::Array(items)) => items,
        other => panic!("questions --json: {other:?} from {}", stdout_of(&out)),
    }
}

/// Waits until `questions --json` lists a `kind` item for `job` that `pred` accepts.
fn wait_for_item(sb: &Sandbox, job: &str, kind: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let mut found = None;
    wait_until(&format!("a pending {kind} of {job}"), || {
        found = questions_json(sb, &[])
            .into_iter()
            .find(|i| i["job_id"] == job && i["kind"] == kind && pred(i));
        found.is_some()
    });
    found.unwrap()
}

/// No ESC or BEL byte (JSON output: its strings are escaped, so a raw one is a leak).
fn assert_no_esc_bel(bytes: &[u8], what: &str) {
    assert!(
        !bytes.contains(&0x1b) && !bytes.contains(&0x07),
        "ESC/BEL in {what}: {:?}",
        String::from_utf8_lossy(bytes)
    );
}

/// Text for people: no ESC or BEL, and no C1 CSI/OSC characters either.
fn assert_no_control(bytes: &[u8], what: &str) {
    assert_no_esc_bel(bytes, what);
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.contains('\u{9b}') && !text.contains('\u{9d}'),
        "C1 control in {what}: {text:?}"
    );
}

/// Sets a flag when dropped, so a helper thread stops also when the test panics.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Eight operators racing on one question, 200 times
// ---------------------------------------------------------------------------------------------

const RACE_OPTIONS: [&str; 8] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
];

/// What the losers of the race rounds were told, by kind.
#[derive(Default, Debug)]
struct LoserMessages {
    already_answered: usize,
    no_pending_question: usize,
}

/// Runs `rounds` rounds: a fresh question, eight `luzia answer` processes released at once
/// (each blocked in `read` on its own stdin until all eight have started), one winner. A
/// reader thread reads response.json in a tight loop the whole time: whenever it exists it must
/// be complete JSON. With `strict`, every loser must be told who answered.
fn race_rounds(rounds: usize, strict: bool) -> LoserMessages {
    let sb = Sandbox::new();
    // The test process stands in for the agent: it outlives every round, however slow the
    // machine (a `sleep 60` might not).
    let dir = live_job(&sb, "race-1", "race", std::process::id());
    let response = dir.join("response.json");

    // The reader: counts the times it saw the file, collects every torn read.
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_guard = StopOnDrop(Arc::clone(&stop));
    let seen = Arc::new(AtomicUsize::new(0));
    let torn = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = {
        let (stop, seen, torn, path) = (
            Arc::clone(&stop),
            Arc::clone(&seen),
            Arc::clone(&torn),
            response.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match fs::read(&path) {
                    Ok(bytes) => {
                        seen.fetch_add(1, Ordering::Relaxed);
                        let whole = serde_json::from_slice::<Value>(&bytes)
                            .ok()
                            .filter(|v| v["answer"].is_string() && v["question_id"].is_string());
                        if whole.is_none() {
                            torn.lock()
                                .unwrap()
                                .push(String::from_utf8_lossy(&bytes).into_owned());
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => torn.lock().unwrap().push(format!("read error: {e}")),
                }
            }
        })
    };

    let mut told = LoserMessages::default();
    for round in 0..rounds {
        // A fresh question each round; the last round's answer goes first.
        let qid = format!("race-q{round}");
        match fs::remove_file(&response) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("{e}"),
        }
        put_atomic(
            &dir,
            "clarification.json",
            &choice_question(&qid, "Which one?", &RACE_OPTIONS),
        );

        // Eight operators, each answering differently: odd ones by option text in capitals,
        // even ones by option number.
        let mut racers: Vec<(ChildGuard, BufReader<std::process::ChildStdout>)> = (0..8)
            .map(|i| {
                let answer = if i % 2 == 0 {
                    (i + 1).to_string()
                } else {
                    RACE_OPTIONS[i].to_uppercase()
                };
                let mut cmd = Command::new("sh");
                isolate(&mut cmd, &sb);
                let root = sb.root.to_str().unwrap();
                cmd.arg("-c")
                    .arg(r#"echo ready; read go; exec "$@""#)
                    .args(["sh", LUZIA, "--jobs-dir", root, "answer", "race-1", &answer])
                    .env("USER", format!("racer{i}"))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let mut child = cmd.spawn().expect("spawn sh");
                let out = BufReader::new(child.stdout.take().unwrap());
                (ChildGuard::new(child), out)
            })
            .collect();
        // The barrier: all eight are up and blocked on stdin...
        for (_, out) in racers.iter_mut() {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            assert_eq!(line, "ready\n");
        }
        // ...then released together.
        for (guard, _) in racers.iter_mut() {
            let mut stdin = guard.child().stdin.take().unwrap();
            stdin.write_all(b"\n").unwrap();
        }
        let results: Vec<Done> = racers
            .iter_mut()
            .map(|(guard, out)| {
                let status = guard.wait_within(HANG_GUARD, "luzia answer");
                let mut stdout = String::new();
                out.read_to_string(&mut stdout).unwrap();
                let mut stderr = String::new();
                guard
                    .child()
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut stderr)
                    .unwrap();
                Done {
                    code: status.code(),
                    stdout,
                    stderr,
                }
            })
            .collect();

        let winners: Vec<usize> = (0..8).filter(|&i| results[i].code == Some(0)).collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one winner, got {winners:?}: {results:#?}"
        );
        let w = winners[0];
        let won = RACE_OPTIONS[w];
        assert_eq!(
            results[w].stdout,
            format!("answered race-1: {won}\n"),
            "round {round}"
        );
        for (i, r) in results.iter().enumerate().filter(|(i, _)| *i != w) {
            assert_eq!(r.code, Some(1), "round {round}, racer {i}: {r:?}");
            assert_eq!(
                r.stdout, "",
                "round {round}, racer {i}: a loser prints nothing"
            );
            let already = r.stderr.contains("already answered by racer")
                && r.stderr.contains(&format!("'{won}'"));
            let no_question = r.stderr.contains("has no pending question");
            if already {
                assert!(
                    r.stderr.contains(&format!("racer{w}@")),
                    "round {round}: the loser is told the winner: {r:?}"
                );
                told.already_answered += 1;
            } else if no_question && !strict {
                told.no_pending_question += 1;
            } else {
                panic!("round {round}, racer {i} lost without being told who won: {r:?}");
            }
        }
        let stands = read_json(&response);
        assert_eq!(stands["question_id"], json!(qid), "round {round}");
        assert_eq!(stands["answer"], json!(won), "round {round}");
        assert_eq!(stands["choice"], json!(won), "round {round}");
        assert_eq!(stands["source"], "cli", "round {round}");
        assert!(
            stands["answered_by"]
                .as_str()
                .unwrap()
                .starts_with(&format!("racer{w}@")),
            "round {round}: {stands}"
        );
        assert!(
            leftovers(&dir).is_empty(),
            "round {round}: temporary files left: {:?}",
            leftovers(&dir)
        );
        assert!(
            dir.join("clarification.json").exists(),
            "round {round}: an operator never removes the question"
        );
    }

    stop.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    let torn = torn.lock().unwrap();
    assert!(torn.is_empty(), "torn reads of response.json: {torn:?}");
    assert!(
        seen.load(Ordering::Relaxed) > 0,
        "the reader never saw a response.json, so it proved nothing"
    );
    told
}

/// The issue's "done when": eight processes answering one question at once leave exactly one
/// answer, every time, 200 times; nobody ever reads half of it.
#[test]
fn eight_operators_racing_leave_exactly_one_answer_200_times() {
    let started = Instant::now();
    let told = race_rounds(200, false);
    eprintln!(
        "race: 200 rounds x 8 operators in {:?}; losers told {told:?}",
        started.elapsed()
    );
}

/// The same race, asking more: every loser is told who answered first.
#[test]
fn racing_losers_are_all_told_who_answered_first() {
    race_rounds(30, true);
}

// ---------------------------------------------------------------------------------------------
// 2. An operator's answer racing the agent's timeout
// ---------------------------------------------------------------------------------------------

/// Runs `ask --timeout 1s --default staging` 20 times with the operator's `luzia answer`
/// started at times spread around the deadline (from 60 ms before to 35 ms after it, measured
/// from when clarification.json appeared). Whichever wins, exactly one answer stands, the agent
/// prints it and says where it came from, and the history records it with its true source.
fn timeout_races(strict: bool) -> BTreeMap<&'static str, usize> {
    let sb = Sandbox::new();
    let mut outcomes = BTreeMap::new();
    for run_no in 0..20i64 {
        let id = format!("tr-{run_no}");
        let dir = live_job(&sb, &id, "timeouts", std::process::id());
        let dir_s = dir.to_str().unwrap();
        let asker = Running::spawn(&mut agent(
            &sb,
            &[
                "ask",
                "Which database?",
                "--option",
                "production",
                "--option",
                "staging",
                "--timeout",
                "1s",
                "--default",
                "staging",
                "--job-dir",
                dir_s,
            ],
        ));
        let clar = dir.join("clarification.json");
        let mut asked_at = Instant::now();
        wait_until("clarification.json", || {
            asked_at = Instant::now();
            clar.exists()
        });
        let offset_ms = -60 + 5 * run_no;
        let send_at = asked_at + Duration::from_millis(1000);
        let send_at = if offset_ms >= 0 {
            send_at + Duration::from_millis(offset_ms as u64)
        } else {
            send_at - Duration::from_millis((-offset_ms) as u64)
        };
        std::thread::sleep(send_at.saturating_duration_since(Instant::now()));
        let op = run(
            &mut operator(&sb, &["answer", &id, "production"]),
            "luzia answer",
        );
        let ask = asker.finish("luzia ask");

        let ctx =
            format!("run {run_no} (operator at {offset_ms:+} ms): ask {ask:?}, operator {op:?}");
        assert_eq!(ask.code, Some(0), "{ctx}");
        let lines: Vec<&str> = ask.stdout.lines().collect();
        let h = history(&dir);
        assert_eq!(h.len(), 1, "{ctx}: one exchange, one history line: {h:?}");
        let response = &h[0]["response"];
        assert_eq!(h[0]["clarification"]["default_if_timeout"], "staging");
        match lines.as_slice() {
            ["production"] => {
                assert!(ask.stderr.contains("answered by operator@"), "{ctx}");
                assert!(ask.stderr.contains("(cli)"), "{ctx}");
                assert_eq!(response["answer"], "production", "{ctx}");
                assert_eq!(response["source"], "cli", "{ctx}");
                assert_eq!(op.code, Some(0), "{ctx}");
                assert_eq!(op.stdout, format!("answered {id}: production\n"), "{ctx}");
                *outcomes.entry("operator won").or_default() += 1;
            }
            ["staging"] => {
                assert!(
                    ask.stderr.contains("no answer in time: using the default"),
                    "{ctx}"
                );
                assert!(!ask.stderr.contains("answered by"), "{ctx}");
                assert_eq!(response["answer"], "staging", "{ctx}");
                assert_eq!(
                    response["source"], "timeout",
                    "{ctx}: never recorded as a person"
                );
                assert_eq!(response["answered_by"], "timeout", "{ctx}");
                // The operator lost: told so, and nothing of theirs stands.
                let told_timeout = op.stderr.contains("already answered by timeout");
                let told_nothing = op.stderr.contains("has no pending question");
                let told_unreadable = op
                    .stderr
                    .contains("already answered by someone (response.json is unreadable)");
                if op.code == Some(0) && !strict {
                    // The known lost-answer race (pinned down deterministically by
                    // `an_operator_delayed_before_link_is_not_told_answered`): this operator
                    // read the question before the timeout, linked after the agent archived,
                    // and was told "answered". Tolerated here so that this test stays stable
                    // under load; its stray response.json is the evidence.
                    assert_eq!(op.stdout, format!("answered {id}: production\n"), "{ctx}");
                    let stray = read_json(&dir.join("response.json"));
                    assert_eq!(stray["answer"], "production", "{ctx}");
                    fs::remove_file(dir.join("response.json")).unwrap();
                    *outcomes
                        .entry("timeout won, operator's answer lost (known bug)")
                        .or_default() += 1;
                } else if op.code == Some(1) && told_timeout {
                    *outcomes.entry("timeout won, operator told").or_default() += 1;
                } else if op.code == Some(1) && told_nothing && !strict {
                    *outcomes
                        .entry("timeout won, operator told 'no pending question'")
                        .or_default() += 1;
                } else if op.code == Some(1) && told_unreadable && !strict {
                    // Known bug, pinned down by
                    // `an_operator_losing_to_an_archived_answer_is_told_who_won`: its link()
                    // failed, and by the time it re-read response.json the agent had archived it.
                    *outcomes
                        .entry("timeout won, operator told 'unreadable' (known bug)")
                        .or_default() += 1;
                } else {
                    panic!("{ctx}: the late operator was not told the timeout settled it");
                }
            }
            other => panic!("{ctx}: ask must print exactly one answer, printed {other:?}"),
        }
        for gone in ["clarification.json", "response.json"] {
            assert!(!dir.join(gone).exists(), "{ctx}: {gone} left behind");
        }
        assert!(leftovers(&dir).is_empty(), "{ctx}");
    }
    outcomes
}

#[test]
fn an_answer_racing_the_timeout_leaves_exactly_one_response() {
    let outcomes = timeout_races(false);
    eprintln!("timeout race outcomes: {outcomes:?}");
}

#[test]
fn a_late_operator_is_always_told_the_timeout_settled_it() {
    timeout_races(true);
}

/// Whether strace can trace here (it is used to hold a process at one system call).
fn strace_usable() -> bool {
    Command::new("strace")
        .args(["-qq", "-o", "/dev/null", "-e", "trace=linkat", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `luzia answer JOB ANSWER` as `USER=slow`, its link() delayed by strace (`delay` is strace's
/// `delay_enter=US` and/or `delay_exit=US`).
fn slow_answer(sb: &Sandbox, job: &str, answer: &str, delay: &str) -> Command {
    let mut cmd = Command::new("strace");
    isolate(&mut cmd, sb);
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=linkat", "-e"])
        .arg(format!("inject=linkat:{delay}"))
        .arg(LUZIA)
        .arg("--jobs-dir")
        .arg(&sb.root)
        .args(["answer", job, answer])
        .env("USER", "slow");
    cmd
}

/// The lost answer, made deterministic: operator A reads the pending question and writes its
/// unnamed file, and its link() is held back (strace delays the syscall by 1.5 s); meanwhile
/// operator B answers, and the agent reads B's answer, archives the exchange and removes
/// response.json. A's link() then succeeds on the empty name.
#[test]
fn an_operator_delayed_before_link_is_not_told_answered() {
    if !strace_usable() {
        eprintln!("skipped: strace is missing or cannot trace here");
        return;
    }
    let sb = Sandbox::new();
    let dir = live_job(&sb, "slow-1", "p", std::process::id());
    let d = dir.to_str().unwrap();
    let asker = Running::spawn(&mut agent(
        &sb,
        &[
            "ask",
            "Which?",
            "-o",
            "production",
            "-o",
            "staging",
            "--job-dir",
            d,
        ],
    ));
    wait_until("the question", || dir.join("clarification.json").exists());

    let slow = Running::spawn(&mut slow_answer(
        &sb,
        "slow-1",
        "production",
        "delay_enter=1500000",
    ));
    // A has read the question and is about to link: its unnamed file is open.
    wait_until("operator A's unnamed file", || {
        slow.holds_unnamed_file_in(&dir)
    });

    let fast = run(
        &mut operator(&sb, &["answer", "slow-1", "staging"]),
        "answer",
    );
    assert_eq!(fast.code, Some(0), "{fast:?}");
    let ask = asker.finish("ask");
    assert_eq!(ask.stdout, "staging\n", "the agent went on with B's answer");
    let slow = slow.finish("slow answer");
    let stray = fs::read_to_string(dir.join("response.json")).ok();
    assert!(
        slow.code == Some(1) && stray.is_none(),
        "A must be told someone else answered, and leave nothing behind: A {slow:?}, \
         stray response.json {stray:?}"
    );
}

/// The loser's re-read, made deterministic: operator A's link() is held back on the way in
/// (so operator B publishes first) and on the way out (so the agent, played here by the test,
/// archives the exchange before A re-reads response.json to say who won).
#[test]
fn an_operator_losing_to_an_archived_answer_is_told_who_won() {
    if !strace_usable() {
        eprintln!("skipped: strace is missing or cannot trace here");
        return;
    }
    let sb = Sandbox::new();
    let dir = live_job(&sb, "gone-1", "p", std::process::id());
    put_atomic(
        &dir,
        "clarification.json",
        &choice_question("q1", "Which?", &["production", "staging"]),
    );
    let slow = Running::spawn(&mut slow_answer(
        &sb,
        "gone-1",
        "production",
        "delay_enter=1000000:delay_exit=2000000",
    ));
    wait_until("operator A's unnamed file", || {
        slow.holds_unnamed_file_in(&dir)
    });
    let first_seen = Instant::now();
    let fast = run(
        &mut operator(&sb, &["answer", "gone-1", "staging"]),
        "answer",
    );
    assert_eq!(fast.code, Some(0), "{fast:?}");
    let winner: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("response.json")).unwrap()).unwrap();
    // A's link() runs about 1 s after its unnamed file was opened, and fails (B's answer is
    // there); it returns about 2 s later. Half-way, the agent archives the exchange.
    std::thread::sleep(
        (first_seen + Duration::from_millis(2000)).saturating_duration_since(Instant::now()),
    );
    let record = json!({"clarification": {"id": "q1"}, "response": winner});
    fs::write(dir.join("history.jsonl"), format!("{record}\n")).unwrap();
    fs::remove_file(dir.join("clarification.json")).unwrap();
    fs::remove_file(dir.join("response.json")).unwrap();
    let slow = slow.finish("slow answer");
    assert_eq!(slow.code, Some(1), "{slow:?}");
    assert!(
        slow.stderr.contains("already answered by operator@") && slow.stderr.contains("'staging'"),
        "A is told who won and with what: {slow:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 3. A real agent script and an operator at the CLI
// ---------------------------------------------------------------------------------------------

const AGENT_SCRIPT: &str = r#"
set -u
echo $$ > "$LUZIA_JOB_DIR/pid"
log="$OUT/log.txt"
"$LUZIA" progress 40; echo "progress1 rc=$?" >> "$log"
"$LUZIA" ask "Which database?" --option production --option staging --context "migration task" \
    > "$OUT/ask1.txt" 2> "$OUT/ask1.err"
echo "ask1 rc=$?" >> "$log"
"$LUZIA" progress --step 2 --of 5 --name x; echo "progress2 rc=$?" >> "$log"
"$LUZIA" ask --type text "Describe the release" > "$OUT/ask2.txt" 2> "$OUT/ask2.err"
echo "ask2 rc=$?" >> "$log"
"$LUZIA" gate migrate "Run 3 migrations" 2> "$OUT/gate1.err"
echo "gate1 rc=$?" >> "$log"
"$LUZIA" gate deploy "Deploy now" 2> "$OUT/gate2.err"
echo "gate2 rc=$?" >> "$log"
echo done >> "$log"
"#;

fn jobs_entry(sb: &Sandbox, id: &str) -> Value {
    by_id(&sb.jobs_json(&[]))
        .remove(id)
        .unwrap_or_else(|| panic!("{id} not listed"))
}

#[test]
fn an_agent_script_asks_waits_at_gates_and_gets_every_answer() {
    let sb = Sandbox::new();
    let id = "e2e-1";
    let meta = json!({"id": id, "project": "e2e", "task": "release", "started": now_rfc3339()});
    sb.write(id, "meta.json", meta.to_string());
    let dir = sb.job_dir(id);
    let out = sb.tmp.path().join("agent-out");
    fs::create_dir(&out).unwrap();
    let mut script = Command::new("sh");
    isolate(&mut script, &sb);
    script
        .arg("-c")
        .arg(AGENT_SCRIPT)
        .env("LUZIA_JOB_DIR", &dir)
        .env("LUZIA", LUZIA)
        .env("OUT", &out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut script = ChildGuard::new(script.spawn().expect("spawn sh"));

    // The choice question, as `questions --json` shows it; progress 40 meanwhile.
    let item = wait_for_item(&sb, id, "question", |i| {
        i["question"]["question"] == "Which database?"
    });
    assert_eq!(item["standing"], "pending");
    assert_eq!(item["status"], "waiting");
    assert_eq!(item["project"], "e2e");
    let q = &item["question"];
    assert_eq!(q["type"], "choice");
    assert_eq!(q["options"], json!(["production", "staging"]));
    assert_eq!(q["context"], "migration task");
    assert_eq!(q["id"], "q1");
    let job = jobs_entry(&sb, id);
    assert_eq!(job["status"], "waiting");
    assert_eq!(job["waiting"], "question");
    assert_eq!(job["pid"], json!(script.id()));
    assert_eq!(job["progress"]["percent"], json!(40.0));
    let done = run(&mut operator(&sb, &["answer", id, "2"]), "answer");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(done.stdout, format!("answered {id}: staging\n"));

    // The free-text question, answered in several words and two lines, word for word.
    let item = wait_for_item(&sb, id, "question", |i| {
        i["question"]["question"] == "Describe the release"
    });
    assert_eq!(item["question"]["type"], "text");
    assert_eq!(
        item["question"]["id"], "q2",
        "the next question gets the next id"
    );
    let job = jobs_entry(&sb, id);
    assert_eq!(
        job["progress"],
        json!({"percent": 40.0, "step": 2, "total_steps": 5, "step_name": "x"}),
        "the step replaced the percent; the percent is derived from it"
    );
    let text = "Ship it  now: \"v2\"\nsecond line";
    let done = run(
        &mut operator(&sb, &["answer", id, "Ship", "it  now: \"v2\"\nsecond line"]),
        "answer",
    );
    assert_eq!(done.code, Some(0), "{done:?}");

    // The first gate: approved.
    let item = wait_for_item(&sb, id, "approval", |i| i["approval"]["gate"] == "migrate");
    assert_eq!(item["approval"]["description"], "Run 3 migrations");
    assert_eq!(item["approval"]["auto_approve_after_minutes"], Value::Null);
    assert_eq!(jobs_entry(&sb, id)["waiting"], "approval");
    let done = run(
        &mut operator(&sb, &["approve", id, "--reason", "go ahead"]),
        "approve",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(done.stdout, format!("approved {id} at gate 'migrate'\n"));

    // The second gate: denied, with a reason the agent must receive word for word.
    let reason = "not during business hours -- wait until 18:00 (Bruno's call; café ☕)";
    wait_for_item(&sb, id, "approval", |i| i["approval"]["gate"] == "deploy");
    let done = run(
        &mut operator(&sb, &["deny", id, "--reason", reason]),
        "deny",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(done.stdout, format!("denied {id} at gate 'deploy'\n"));

    let status = script.wait_within(HANG_GUARD, "the agent script");
    assert!(status.success(), "{status:?}");
    let read = |name: &str| fs::read_to_string(out.join(name)).unwrap();
    assert_eq!(
        read("log.txt"),
        "progress1 rc=0\nask1 rc=0\nprogress2 rc=0\nask2 rc=0\ngate1 rc=0\ngate2 rc=4\ndone\n"
    );
    assert_eq!(read("ask1.txt"), "staging\n");
    assert!(
        read("ask1.err").contains("answered by operator@"),
        "{}",
        read("ask1.err")
    );
    assert_eq!(read("ask2.txt"), format!("{text}\n"));
    assert_eq!(
        read("gate2.err"),
        format!("{reason}\n"),
        "the reason, word for word"
    );

    // One history line per exchange, in order, with what was decided; progress milestones
    // are recorded beside them.
    let (milestones, h): (Vec<Value>, Vec<Value>) = history(&dir)
        .into_iter()
        .partition(|r| r.get("progress").is_some());
    assert!(
        !milestones.is_empty(),
        "the script's progress is a milestone"
    );
    assert_eq!(h.len(), 4, "{h:#?}");
    assert_eq!(h[0]["clarification"]["question"], "Which database?");
    assert_eq!(h[0]["response"]["answer"], "staging");
    assert_eq!(h[0]["response"]["source"], "cli");
    assert_eq!(h[1]["clarification"]["type"], "text");
    assert_eq!(h[1]["response"]["answer"], text);
    assert_eq!(h[2]["approval"]["gate"], "migrate");
    assert_eq!(h[2]["decision"]["approved"], true);
    assert_eq!(h[2]["decision"]["reason"], "go ahead");
    assert_eq!(h[3]["approval"]["gate"], "deploy");
    assert_eq!(h[3]["decision"]["approved"], false);
    assert_eq!(h[3]["decision"]["reason"], reason);
    assert_eq!(h[3]["decision"]["source"], "cli");
    for gone in [
        "clarification.json",
        "response.json",
        "approval.json",
        "approved.json",
    ] {
        assert!(!dir.join(gone).exists(), "{gone} left behind");
    }
    assert!(leftovers(&dir).is_empty());

    // The supervisor's exit line: the job is done, its last progress still reported.
    fs::write(dir.join("output.log"), "\nexit:0\n").unwrap();
    let job = jobs_entry(&sb, id);
    assert_eq!(job["status"], "completed");
    assert_eq!(job["waiting"], Value::Null);
    assert_eq!(job["progress"]["step_name"], "x");
    assert!(questions_json(&sb, &[]).is_empty());
}

const SESSION_SCRIPT: &str = r#"
set -u
echo $$ > "$LUZIA_JOB_DIR/pid"
"$LUZIA" gate migrate "Run 3 migrations" > "$OUT/gate1.txt" 2> "$OUT/gate1.err"
echo "gate1 rc=$?" >> "$OUT/log.txt"
"$LUZIA" gate deploy "Deploy to staging" --allow-session "every deploy of this job" \
    > "$OUT/gate2.txt" 2> "$OUT/gate2.err"
echo "gate2 rc=$?" >> "$OUT/log.txt"
"#;

/// `luzia approve --always` at a gate that offers the session (`luzia gate --allow-session`),
/// and refused at one that does not, saying so; the gate's stdout says what was approved.
#[test]
fn approving_for_the_session_only_where_the_gate_offers_it() {
    let sb = Sandbox::new();
    let id = "e2e-s";
    let meta = json!({"id": id, "project": "e2e", "task": "release", "started": now_rfc3339()});
    sb.write(id, "meta.json", meta.to_string());
    let dir = sb.job_dir(id);
    let out = sb.tmp.path().join("agent-out");
    fs::create_dir(&out).unwrap();
    let mut script = Command::new("sh");
    isolate(&mut script, &sb);
    script
        .arg("-c")
        .arg(SESSION_SCRIPT)
        .env("LUZIA_JOB_DIR", &dir)
        .env("LUZIA", LUZIA)
        .env("OUT", &out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut script = ChildGuard::new(script.spawn().expect("spawn sh"));

    let item = wait_for_item(&sb, id, "approval", |i| i["approval"]["gate"] == "migrate");
    assert!(item["approval"].get("allow_session").is_none(), "{item}");
    let refused = run(&mut operator(&sb, &["approve", id, "--always"]), "approve");
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert_eq!(
        refused.stderr,
        format!(
            "luzia: error: gate 'migrate' (g1) of job {id} cannot be approved for the session: \
             its agent did not offer it (it asks again for each request); approve it once with \
             `luzia approve {id}`\n"
        )
    );
    assert!(!dir.join("approved.json").exists(), "nothing was published");
    let done = run(&mut operator(&sb, &["approve", id]), "approve");
    assert_eq!(done.code, Some(0), "{done:?}");

    let item = wait_for_item(&sb, id, "approval", |i| i["approval"]["gate"] == "deploy");
    assert_eq!(
        item["approval"]["allow_session"],
        "every deploy of this job"
    );
    let done = run(&mut operator(&sb, &["approve", id, "--always"]), "approve");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        done.stdout,
        format!("approved for the session {id} at gate 'deploy'\n")
    );

    let status = script.wait_within(HANG_GUARD, "the agent script");
    assert!(status.success(), "{status:?}");
    let read = |name: &str| fs::read_to_string(out.join(name)).unwrap();
    assert_eq!(read("log.txt"), "gate1 rc=0\ngate2 rc=0\n");
    assert_eq!(
        read("gate1.txt"),
        "",
        "a gate that offers no session prints nothing"
    );
    assert_eq!(read("gate2.txt"), "session\n");
    assert!(
        read("gate2.err").starts_with("luzia: approved for the session by operator@"),
        "{}",
        read("gate2.err")
    );
    let h = history(&dir);
    assert_eq!(h.len(), 2, "{h:#?}");
    assert!(h[0]["decision"].get("scope").is_none(), "{h:#?}");
    assert_eq!(
        h[1]["approval"]["allow_session"],
        "every deploy of this job"
    );
    assert_eq!(h[1]["decision"]["scope"], "session");
    assert_eq!(h[1]["decision"]["approved"], true);
}

// ---------------------------------------------------------------------------------------------
// 4. The operator's commands in detail
// ---------------------------------------------------------------------------------------------

#[test]
fn choices_by_number_or_text_any_case_and_wrong_options_refused() {
    let sb = Sandbox::new();
    let agent = sleeper();
    let dir = live_job(&sb, "c-1", "p", agent.id());
    let cases: &[(&str, Result<&str, &str>)] = &[
        ("STAGING", Ok("staging")),
        ("1", Ok("production")),
        ("  2 ", Ok("staging")),
        ("Production", Ok("production")),
        ("3", Err("1) production, 2) staging")),
        ("0", Err("1) production, 2) staging")),
        (
            "dev",
            Err("'dev' is not one of the options: 1) production, 2) staging"),
        ),
    ];
    for (n, (input, want)) in cases.iter().enumerate() {
        let _ = fs::remove_file(dir.join("response.json"));
        let qid = format!("q{n}");
        put_atomic(
            &dir,
            "clarification.json",
            &choice_question(&qid, "Which database?", &["production", "staging"]),
        );
        let done = run(&mut operator(&sb, &["answer", "c-1", input]), "answer");
        match want {
            Ok(answer) => {
                assert_eq!(done.code, Some(0), "{input:?}: {done:?}");
                assert_eq!(done.stdout, format!("answered c-1: {answer}\n"));
                let r = read_json(&dir.join("response.json"));
                assert_eq!(r["question_id"], json!(qid));
                assert_eq!(r["answer"], *answer);
                assert_eq!(r["choice"], *answer, "the older form's field too");
                assert_eq!(r["source"], "cli");
                assert!(r["answered_by"].as_str().unwrap().starts_with("operator@"));
                assert!(r["answered_at"].as_str().unwrap().ends_with('Z'));
            }
            Err(msg) => {
                assert_eq!(done.code, Some(1), "{input:?}: {done:?}");
                assert!(done.stderr.contains(msg), "{input:?}: {}", done.stderr);
                assert!(
                    !dir.join("response.json").exists(),
                    "{input:?}: a refused answer writes nothing"
                );
            }
        }
    }
}

#[test]
fn confirm_takes_yes_no_y_n_and_text_keeps_its_words() {
    let sb = Sandbox::new();
    let agent = sleeper();
    let dir = live_job(&sb, "c-2", "p", agent.id());
    let confirm = |n: usize| json!({"id": format!("c{n}"), "type": "confirm", "question": "Go?"});
    let cases: &[(&[&str], Result<&str, &str>)] = &[
        (&["yes"], Ok("yes")),
        (&["Y"], Ok("yes")),
        (&["no"], Ok("no")),
        (&["N"], Ok("no")),
        (&["maybe"], Err("answer yes or no")),
        (&["yes", "please"], Err("answer yes or no")),
    ];
    for (n, (input, want)) in cases.iter().enumerate() {
        let _ = fs::remove_file(dir.join("response.json"));
        put_atomic(&dir, "clarification.json", &confirm(n).to_string());
        let mut args = vec!["answer", "c-2"];
        args.extend_from_slice(input);
        let done = run(&mut operator(&sb, &args), "answer");
        match want {
            Ok(a) => {
                assert_eq!(done.code, Some(0), "{input:?}: {done:?}");
                assert_eq!(read_json(&dir.join("response.json"))["answer"], *a);
            }
            Err(msg) => {
                assert_eq!(done.code, Some(1), "{input:?}: {done:?}");
                assert!(done.stderr.contains(msg), "{input:?}: {}", done.stderr);
                assert!(!dir.join("response.json").exists());
            }
        }
    }
    // Free text: the words joined by one space, each kept as given.
    let _ = fs::remove_file(dir.join("response.json"));
    put_atomic(
        &dir,
        "clarification.json",
        &json!({"id": "t1", "type": "text", "question": "Why?"}).to_string(),
    );
    let done = run(
        &mut operator(&sb, &["answer", "c-2", "because", "  it's\n friday"]),
        "answer",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        read_json(&dir.join("response.json"))["answer"],
        "because   it's\n friday"
    );
}

#[test]
fn operator_refusals_say_why() {
    let sb = Sandbox::new();
    let agent = sleeper();
    let dir = live_job(&sb, "idle", "p", agent.id());

    // Nothing pending.
    let done = run(&mut operator(&sb, &["answer", "idle", "x"]), "answer");
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(
        done.stderr.contains("job idle has no pending question"),
        "{}",
        done.stderr
    );
    for verb in [
        &["approve", "idle"][..],
        &["deny", "idle", "--reason", "no"],
    ] {
        let done = run(&mut operator(&sb, verb), "approve/deny");
        assert_eq!(done.code, Some(1), "{verb:?}: {done:?}");
        assert!(
            done.stderr
                .contains("job idle has no pending approval gate"),
            "{}",
            done.stderr
        );
    }
    // No such job.
    let done = run(&mut operator(&sb, &["answer", "nope-1", "x"]), "answer");
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(done.stderr.contains("no job 'nope-1'"), "{}", done.stderr);

    // A gate: deny without a reason is a usage error and decides nothing.
    put_atomic(
        &dir,
        "approval.json",
        &json!({"gate": "deploy", "description": "Deploy", "awaiting_since": now_rfc3339()})
            .to_string(),
    );
    let done = run(&mut operator(&sb, &["deny", "idle"]), "deny");
    assert_eq!(done.code, Some(2), "{done:?}");
    assert!(done.stderr.contains("--reason"), "{}", done.stderr);
    let done = run(
        &mut operator(&sb, &["deny", "idle", "--reason", "  "]),
        "deny",
    );
    assert_eq!(done.code, Some(1), "a blank reason is no reason: {done:?}");
    assert!(done.stderr.contains("needs a reason"), "{}", done.stderr);
    assert!(!dir.join("approved.json").exists());
    // Approve, then a second decision finds nothing pending.
    let done = run(&mut operator(&sb, &["approve", "idle"]), "approve");
    assert_eq!(done.code, Some(0), "{done:?}");
    let d = read_json(&dir.join("approved.json"));
    assert_eq!(d["approved"], true);
    assert_eq!(d["gate"], "deploy");
    assert_eq!(d["source"], "cli");
    let done = run(
        &mut operator(&sb, &["deny", "idle", "--reason", "late"]),
        "deny",
    );
    assert_eq!(done.code, Some(1), "{done:?}");
    assert_eq!(
        read_json(&dir.join("approved.json"))["approved"],
        true,
        "nothing overwritten"
    );

    // Invalid job ids: usage errors, refused before any path is built (`--` so that "-"
    // reaches the id parser rather than the flag parser).
    for bad in ["../idle", "a/b", ".hidden", "", "-", "x y"] {
        for args in [
            vec!["answer", "--", bad, "x"],
            vec!["approve", "--", bad],
            vec!["deny", "--reason", "r", "--", bad],
        ] {
            let done = run(&mut operator(&sb, &args), "invalid id");
            assert_eq!(done.code, Some(2), "{args:?}: {done:?}");
            assert!(
                done.stderr.contains("not a valid job id"),
                "{args:?}: {}",
                done.stderr
            );
        }
    }
    let after: Vec<_> = fs::read_dir(&sb.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(after, ["idle"], "nothing written anywhere");
    assert!(!sb.root.parent().unwrap().join("idle").exists());
}

#[test]
fn orphaned_questions_are_refused_and_needs_input_ones_accepted() {
    let sb = Sandbox::new();
    // Orphaned: the agent's pid is dead and there is no exit line.
    let orphan = live_job(&sb, "orph-1", "p", dead_pid());
    put_atomic(
        &orphan,
        "clarification.json",
        &choice_question("q1", "Which?", &["a", "b"]),
    );
    put_atomic(
        &orphan,
        "approval.json",
        &json!({"gate": "g", "description": "d"}).to_string(),
    );
    let done = run(&mut operator(&sb, &["answer", "orph-1", "a"]), "answer");
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(done.stderr.contains("orphaned"), "{}", done.stderr);
    assert!(!orphan.join("response.json").exists());
    let done = run(&mut operator(&sb, &["approve", "orph-1"]), "approve");
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(done.stderr.contains("orphaned"), "{}", done.stderr);
    assert!(!orphan.join("approved.json").exists());

    // needs_input: the agent stopped with exit:100; the answer is kept for the retry.
    let stopped = live_job(&sb, "ni-1", "p", dead_pid());
    fs::write(stopped.join("output.log"), "thinking\n\nexit:100\n").unwrap();
    put_atomic(
        &stopped,
        "clarification.json",
        &json!({"id": "q7", "type": "confirm", "question": "Proceed?"}).to_string(),
    );
    let done = run(&mut operator(&sb, &["answer", "ni-1", "y"]), "answer");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        done.stdout,
        "answered ni-1: yes\nthe agent has stopped: retry the job so that it reads the answer\n"
    );
    let r = read_json(&stopped.join("response.json"));
    assert_eq!(
        (r["question_id"].as_str(), r["answer"].as_str()),
        (Some("q7"), Some("yes"))
    );
}

#[test]
fn questions_lists_oldest_first_in_sections_filters_and_prints_json() {
    let sb = Sandbox::new();
    let agent = sleeper();
    let ago = |m: i64| {
        (chrono::Utc::now() - chrono::Duration::minutes(m))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    // Three pending in project alpha/beta, asked 2, 9 and 5 minutes ago.
    let newest = live_job(&sb, "j-new", "alpha", agent.id());
    put_atomic(
        &newest,
        "clarification.json",
        &json!({"id": "q1", "type": "text", "question": "Newest?", "asked_at": ago(2)}).to_string(),
    );
    let oldest = live_job(&sb, "j-old", "beta", agent.id());
    let full_question = json!({"id": "q3", "type": "choice", "question": "Oldest?",
        "options": ["production", "staging"], "context": "Running migration task",
        "asked_at": ago(9), "timeout_minutes": 30, "default_if_timeout": "staging"});
    put_atomic(&oldest, "clarification.json", &full_question.to_string());
    let middle = live_job(&sb, "j-mid", "alpha", agent.id());
    let full_gate = json!({"gate": "database_migration", "description": "Middle gate",
        "context": "3 migrations", "awaiting_since": ago(5), "auto_approve_after_minutes": 60});
    put_atomic(&middle, "approval.json", &full_gate.to_string());
    // One stopped for an answer, one orphaned.
    let stopped = live_job(&sb, "j-stop", "alpha", dead_pid());
    fs::write(stopped.join("output.log"), "\nexit:100\n").unwrap();
    put_atomic(
        &stopped,
        "clarification.json",
        &json!({"question": "Stopped?", "asked_at": ago(30)}).to_string(),
    );
    let orphan = live_job(&sb, "j-orph", "beta", dead_pid());
    put_atomic(
        &orphan,
        "clarification.json",
        &json!({"question": "Orphan?", "asked_at": ago(40)}).to_string(),
    );
    // A finished job's leftover question is nobody's business (it is not listed).
    let finished = live_job(&sb, "j-done", "alpha", dead_pid());
    fs::write(finished.join("output.log"), "\nexit:0\n").unwrap();
    put_atomic(
        &finished,
        "clarification.json",
        &json!({"question": "Done?"}).to_string(),
    );

    let out = sb.luzia().arg("questions").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    // Section of every job line, in order.
    let mut section = String::new();
    let mut rows: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') {
            section = line.to_owned();
        } else {
            let job = line.split_whitespace().next().unwrap().to_owned();
            rows.push((section.clone(), job));
        }
    }
    let want = |s: &str, j: &str| (s.to_owned(), j.to_owned());
    assert_eq!(
        rows,
        vec![
            want("Waiting for you:", "j-old"),
            want("Waiting for you:", "j-mid"),
            want("Waiting for you:", "j-new"),
            want("Stopped for an answer (answer, then retry):", "j-stop"),
            want(
                "Orphaned (the agent is gone; nobody will read an answer):",
                "j-orph"
            ),
        ],
        "{text}"
    );
    assert!(text.contains("database_migration: Middle gate"), "{text}");
    assert!(text.contains("Oldest?"), "{text}");

    // --project filters (text and JSON).
    let out = sb
        .luzia()
        .args(["questions", "--project", "beta"])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert!(text.contains("j-old") && text.contains("j-orph"), "{text}");
    assert!(!text.contains("j-new") && !text.contains("j-mid") && !text.contains("j-stop"));
    let beta: Vec<String> = questions_json(&sb, &["--project", "beta"])
        .iter()
        .map(|i| i["job_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(beta, ["j-orph", "j-old"], "oldest first in JSON too");
    let none = sb
        .luzia()
        .args(["questions", "--project", "gamma"])
        .output()
        .unwrap();
    // A project nobody knows is a mistake, not a quiet one.
    assert_eq!(none.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("unknown project 'gamma'"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );

    // --json: every item with its job, kind, standing and the full content.
    let items = questions_json(&sb, &[]);
    let order: Vec<&str> = items
        .iter()
        .map(|i| i["job_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["j-orph", "j-stop", "j-old", "j-mid", "j-new"]);
    let item = |id: &str| items.iter().find(|i| i["job_id"] == id).unwrap();
    let old = item("j-old");
    assert_eq!(old["kind"], "question");
    assert_eq!(old["standing"], "pending");
    assert_eq!(old["status"], "waiting");
    assert_eq!(old["project"], "beta");
    for key in [
        "id",
        "type",
        "question",
        "options",
        "context",
        "timeout_minutes",
        "default_if_timeout",
    ] {
        let (got, want) = (&old["question"][key], &full_question[key]);
        let same = got == want || got.as_f64().is_some_and(|g| Some(g) == want.as_f64());
        assert!(same, "question.{key}: {got} != {want}");
    }
    assert_eq!(old["question"]["asked_at"], full_question["asked_at"]);
    assert!(old["waiting_seconds"].as_i64().unwrap() >= 9 * 60);
    assert!(old["seconds_left"].as_i64().unwrap() > 0);
    let mid = item("j-mid");
    assert_eq!(mid["kind"], "approval");
    assert_eq!(mid["standing"], "pending");
    for key in ["gate", "description", "context", "awaiting_since"] {
        assert_eq!(mid["approval"][key], full_gate[key], "approval.{key}");
    }
    assert_eq!(
        mid["approval"]["auto_approve_after_minutes"].as_f64(),
        Some(60.0)
    );
    assert_eq!(item("j-stop")["standing"], "answer_then_retry");
    assert_eq!(item("j-stop")["status"], "needs_input");
    assert_eq!(item("j-orph")["standing"], "orphaned");
    assert_eq!(item("j-orph")["status"], "died");
    assert_eq!(item("j-new")["question"]["type"], "text");
}

// ---------------------------------------------------------------------------------------------
// 5. Hostile question files
// ---------------------------------------------------------------------------------------------

/// The issue's list of bad clarification.json files, each in a job whose agent is alive.
fn hostile_sandbox(agent_pid: u32) -> Sandbox {
    let sb = Sandbox::new();
    let files: Vec<(&str, Vec<u8>)> = vec![
        (
            "bad-trunc",
            br#"{"id": "q1", "type": "choice", "ques"#.to_vec(),
        ),
        (
            "bad-type",
            br#"{"id": "q1", "type": "slider", "question": "How much?"}"#.to_vec(),
        ),
        (
            "bad-noopt",
            br#"{"id": "q1", "type": "choice", "question": "Pick one", "options": []}"#.to_vec(),
        ),
        ("bad-big", {
            let big = "x".repeat(10 * 1024 * 1024);
            json!({"id": "q1", "type": "text", "question": big})
                .to_string()
                .into_bytes()
        }),
        (
            "bad-esc",
            json!({"id": "q1", "type": "choice",
                "question": "Evil \u{1b}]0;pwned\u{7} \u{1b}[2J\u{1b}[H title \u{9b}31m",
                "options": ["a\u{1b}[31mred", "b\u{7}"],
                "context": "\u{1b}]52;c;ZXZpbA==\u{7}"})
            .to_string()
            .into_bytes(),
        ),
    ];
    for (id, body) in files {
        live_job(&sb, id, "hostile", agent_pid);
        sb.write(id, "clarification.json", body);
    }
    sb
}

#[test]
fn hostile_question_files_never_crash_or_reach_the_terminal() {
    let agent = sleeper();
    let sb = hostile_sandbox(agent.id());

    let out = sb.luzia().arg("questions").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_no_control(&out.stdout, "questions");
    assert_no_control(&out.stderr, "questions (stderr)");
    let text = stdout_of(&out);
    for listed in ["bad-type", "bad-noopt", "bad-esc"] {
        assert!(
            text.contains(listed),
            "{listed} answerable, so listed: {text}"
        );
    }
    assert!(!text.contains("pwned"), "the OSC title leaked: {text}");
    assert!(text.contains("Evil") && text.contains("title"), "{text}");

    let out = sb.luzia().args(["questions", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_no_esc_bel(&out.stdout, "questions --json");
    let items: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let item = |id: &str| items.iter().find(|i| i["job_id"] == id);
    // Answerable as free text, with a note saying why.
    let t = &item("bad-type").expect("bad-type listed")["question"];
    assert_eq!(t["type"], "text");
    assert!(
        t["note"]
            .as_str()
            .unwrap()
            .contains("unknown question type 'slider'"),
        "{t}"
    );
    let n = &item("bad-noopt").expect("bad-noopt listed")["question"];
    assert_eq!(n["type"], "text");
    assert!(n["note"].as_str().unwrap().contains("no options"), "{n}");
    // JSON keeps the text as it is (escaped, so no raw control bytes), for tools to judge.
    let e = &item("bad-esc").expect("bad-esc listed")["question"];
    assert!(e["question"].as_str().unwrap().contains("\u{1b}]0;pwned"));
    assert_eq!(e["note"], Value::Null);
    // Unreadable ones are not offered as answerable.
    assert!(
        item("bad-trunc").is_none() && item("bad-big").is_none(),
        "{items:?}"
    );

    // `jobs ID` for each: no crash, no control bytes, the problem named.
    for (id, needle) in [
        ("bad-trunc", "clarification.json is not valid JSON"),
        ("bad-big", "clarification.json is larger than 1024 KiB"),
        ("bad-type", "How much?"),
        ("bad-noopt", "Pick one"),
        ("bad-esc", "title"),
    ] {
        let out = sb.luzia().args(["jobs", id]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{id}: {}", stderr_of(&out));
        assert_no_control(&out.stdout, id);
        let text = stdout_of(&out);
        assert!(text.contains(needle), "{id}: {text}");
        assert!(
            !text.contains("pwned") && !text.contains("ZXZpbA=="),
            "{id}: {text}"
        );
        let out = sb.luzia().args(["jobs", id, "--json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{id}: {}", stderr_of(&out));
        assert_no_esc_bel(&out.stdout, id);
    }
    let jobs = by_id(&sb.jobs_json(&[]));
    for id in ["bad-trunc", "bad-big"] {
        assert_eq!(
            jobs[id]["status"], "running",
            "{id}: not waiting on a question nobody can read"
        );
        let problems = jobs[id]["problems"].to_string();
        assert!(problems.contains("clarification.json"), "{id}: {problems}");
    }
    for id in ["bad-type", "bad-noopt", "bad-esc"] {
        assert_eq!(jobs[id]["waiting"], "question", "{id}");
    }
    let out = sb.luzia().arg("jobs").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_no_control(&out.stdout, "jobs");

    // Answering: unreadable questions are refused and nothing is written for the agent; the
    // others take free text.
    for id in ["bad-trunc", "bad-big"] {
        let done = run(&mut operator(&sb, &["answer", id, "x"]), "answer");
        assert_eq!(done.code, Some(1), "{id}: {done:?}");
        assert!(!sb.job_dir(id).join("response.json").exists(), "{id}");
        assert!(leftovers(&sb.job_dir(id)).is_empty(), "{id}");
    }
    let done = run(&mut operator(&sb, &["answer", "bad-type", "42"]), "answer");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        read_json(&sb.job_dir("bad-type").join("response.json"))["answer"],
        "42"
    );
    let done = run(
        &mut operator(&sb, &["answer", "bad-noopt", "whichever", "you", "like"]),
        "answer",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        read_json(&sb.job_dir("bad-noopt").join("response.json"))["answer"],
        "whichever you like"
    );
    // A wrong option lists the options without their escapes; a right one is confirmed plainly.
    let done = run(&mut operator(&sb, &["answer", "bad-esc", "9"]), "answer");
    assert_eq!(done.code, Some(1), "{done:?}");
    assert_no_control(done.stderr.as_bytes(), "the refusal");
    assert!(done.stderr.contains("1) ared, 2) b"), "{}", done.stderr);
    let done = run(&mut operator(&sb, &["answer", "bad-esc", "1"]), "answer");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_no_control(done.stdout.as_bytes(), "the confirmation");
    // The agent gets its own option back, exactly as it wrote it.
    assert_eq!(
        read_json(&sb.job_dir("bad-esc").join("response.json"))["answer"],
        "a\u{1b}[31mred"
    );
}

#[test]
fn questions_names_unreadable_question_files() {
    let agent = sleeper();
    let sb = hostile_sandbox(agent.id());
    for id in ["bad-type", "bad-noopt", "bad-esc"] {
        fs::remove_dir_all(sb.job_dir(id)).unwrap();
    }
    let out = sb.luzia().arg("questions").output().unwrap();
    let text = stdout_of(&out);
    assert!(
        text.contains("bad-trunc") && text.contains("bad-big"),
        "the operator is told two agents wait on questions nobody can read: {text}"
    );
    let done = run(&mut operator(&sb, &["answer", "bad-trunc", "x"]), "answer");
    assert!(done.stderr.contains("not valid JSON"), "{}", done.stderr);
}

#[test]
fn the_free_text_note_is_shown_to_people_too() {
    let agent = sleeper();
    let sb = hostile_sandbox(agent.id());
    let out = sb.luzia().arg("questions").output().unwrap();
    let text = stdout_of(&out);
    assert!(text.contains("unknown question type"), "{text}");
    let out = sb.luzia().args(["jobs", "bad-noopt"]).output().unwrap();
    let text = stdout_of(&out);
    assert!(text.contains("no options"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// 6. The agent's side
// ---------------------------------------------------------------------------------------------

#[test]
fn ask_needs_a_job_dir_that_exists_and_a_timeout_for_its_default() {
    let sb = Sandbox::new();
    // No job directory at all: usage error.
    let done = run(&mut agent(&sb, &["ask", "Which?", "--option", "a"]), "ask");
    assert_eq!(done.code, Some(2), "{done:?}");
    assert!(done.stderr.contains("--job-dir"), "{}", done.stderr);
    let done = run(&mut agent(&sb, &["gate", "g", "d"]), "gate");
    assert_eq!(done.code, Some(2), "{done:?}");
    let done = run(&mut agent(&sb, &["progress", "10"]), "progress");
    assert_eq!(done.code, Some(2), "{done:?}");
    // One that does not exist: named, exit 1 (by flag and by environment).
    let missing = sb.tmp.path().join("no-such-job");
    let m = missing.to_str().unwrap();
    let done = run(
        &mut agent(&sb, &["ask", "Which?", "--option", "a", "--job-dir", m]),
        "ask",
    );
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(done.stderr.contains(m), "{}", done.stderr);
    let done = run(
        agent(&sb, &["gate", "g", "d"]).env("LUZIA_JOB_DIR", &missing),
        "gate",
    );
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(done.stderr.contains(m), "{}", done.stderr);
    assert!(!missing.exists(), "nothing created");
    // --default without --timeout: usage error, nothing asked.
    let dir = live_job(&sb, "a-1", "p", std::process::id());
    let d = dir.to_str().unwrap();
    let done = run(
        &mut agent(
            &sb,
            &["ask", "Which?", "-o", "a", "--default", "a", "--job-dir", d],
        ),
        "ask",
    );
    assert_eq!(done.code, Some(2), "{done:?}");
    assert!(done.stderr.contains("--timeout"), "{}", done.stderr);
    // A default that is not an option, a choice without options: refused, nothing asked.
    let done = run(
        &mut agent(
            &sb,
            &[
                "ask",
                "Which?",
                "-o",
                "a",
                "--timeout",
                "1s",
                "--default",
                "b",
                "--job-dir",
                d,
            ],
        ),
        "ask",
    );
    assert_eq!(done.code, Some(1), "{done:?}");
    let done = run(
        &mut agent(&sb, &["ask", "Which?", "--type", "choice", "--job-dir", d]),
        "ask",
    );
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(!dir.join("clarification.json").exists());
    assert!(!dir.join("history.jsonl").exists());
}

#[test]
fn one_question_at_a_time() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "one-1", "p", std::process::id());
    let d = dir.to_str().unwrap();
    let first = Running::spawn(&mut agent(&sb, &["ask", "First?", "--job-dir", d]));
    wait_until("the first question", || {
        dir.join("clarification.json").exists()
    });
    let before = fs::read(dir.join("clarification.json")).unwrap();
    let done = run(&mut agent(&sb, &["ask", "Second?", "--job-dir", d]), "ask");
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(done.stderr.contains("already pending"), "{}", done.stderr);
    assert_eq!(
        fs::read(dir.join("clarification.json")).unwrap(),
        before,
        "the pending question is untouched"
    );
    let done = run(
        &mut operator(&sb, &["answer", "one-1", "the first"]),
        "answer",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    let first = first.finish("ask");
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (Some(0), "the first\n")
    );
    assert_eq!(history(&dir).len(), 1, "the refused one left no trace");
}

#[test]
fn a_stale_response_does_not_answer_a_new_question() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "stale-1", "p", std::process::id());
    // Left from an earlier exchange, with the very id the next question will get.
    let stale = json!({"question_id": "q1", "answer": "production", "answered_by": "old@tool",
                       "source": "cli"});
    fs::write(dir.join("response.json"), stale.to_string()).unwrap();
    let d = dir.to_str().unwrap();
    let mut asker = Running::spawn(&mut agent(
        &sb,
        &[
            "ask",
            "Which?",
            "-o",
            "production",
            "-o",
            "staging",
            "--job-dir",
            d,
        ],
    ));
    let item = wait_for_item(&sb, "stale-1", "question", |_| true);
    assert_eq!(item["standing"], "pending");
    assert!(asker.alive(), "the stale answer did not answer it");
    std::thread::sleep(Duration::from_millis(300));
    assert!(asker.alive(), "the stale answer did not answer it");
    let done = run(
        &mut operator(&sb, &["answer", "stale-1", "staging"]),
        "answer",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    let ask = asker.finish("ask");
    assert_eq!(
        (ask.code, ask.stdout.as_str()),
        (Some(0), "staging\n"),
        "{ask:?}"
    );
    let h = history(&dir);
    assert_eq!(h.len(), 2, "{h:?}");
    assert_eq!(
        h[0]["stale"]["answer"], "production",
        "the stale one archived, not used"
    );
    assert_eq!(h[1]["response"]["answer"], "staging");
}

#[test]
fn a_stale_response_appearing_later_does_not_block_the_answer() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "stale-2", "p", std::process::id());
    let d = dir.to_str().unwrap();
    let asker = Running::spawn(&mut agent(
        &sb,
        &[
            "ask",
            "Which?",
            "-o",
            "production",
            "-o",
            "staging",
            "--job-dir",
            d,
        ],
    ));
    wait_until("the question", || dir.join("clarification.json").exists());
    put_atomic(
        &dir,
        "response.json",
        &json!({"question_id": "q0", "answer": "production", "answered_by": "late@op"}).to_string(),
    );
    let item = wait_for_item(&sb, "stale-2", "question", |_| true);
    assert_eq!(
        item["standing"], "pending",
        "shown as pending, as the protocol says"
    );
    let done = run(
        &mut operator(&sb, &["answer", "stale-2", "staging"]),
        "answer",
    );
    assert_eq!(
        done.code,
        Some(0),
        "a pending question can be answered: {done:?}"
    );
    let ask = asker.finish("ask");
    assert_eq!(ask.stdout, "staging\n");
}

#[test]
fn a_timeout_without_default_exits_3_and_leaves_nothing_pending() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "to-1", "p", std::process::id());
    let done = run(
        &mut agent(
            &sb,
            &[
                "ask",
                "Anyone?",
                "--timeout",
                "1s",
                "--job-dir",
                dir.to_str().unwrap(),
            ],
        ),
        "ask",
    );
    assert_eq!(done.code, Some(3), "{done:?}");
    assert_eq!(done.stdout, "");
    assert!(done.stderr.contains("no answer in time"), "{}", done.stderr);
    assert!(!dir.join("clarification.json").exists());
    assert!(!dir.join("response.json").exists());
    let h = history(&dir);
    assert_eq!(h.len(), 1);
    assert_eq!(
        h[0]["response"],
        Value::Null,
        "no answer recorded as if someone gave one"
    );
    assert!(questions_json(&sb, &[]).is_empty());
}

#[test]
fn a_gate_auto_approves_only_when_asked_and_otherwise_waits() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "g-1", "p", std::process::id());
    let d = dir.to_str().unwrap();
    let done = run(
        &mut agent(
            &sb,
            &[
                "gate",
                "deploy",
                "Deploy now",
                "--auto-approve-after",
                "1s",
                "--job-dir",
                d,
            ],
        ),
        "gate",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(
        done.stderr.contains("approved automatically"),
        "{}",
        done.stderr
    );
    let h = history(&dir);
    assert_eq!(h.len(), 1);
    assert_eq!(h[0]["decision"]["approved"], true);
    assert_eq!(h[0]["decision"]["source"], "auto");
    assert_eq!(h[0]["approval"]["gate"], "deploy");

    // Without auto-approval: still waiting after 2 s, then denied.
    let mut waiter = Running::spawn(&mut agent(
        &sb,
        &["gate", "deploy", "Deploy again", "--job-dir", d],
    ));
    let item = wait_for_item(&sb, "g-1", "approval", |_| true);
    assert_eq!(item["approval"]["description"], "Deploy again");
    std::thread::sleep(Duration::from_secs(2));
    assert!(waiter.alive(), "a gate never opens by itself");
    assert!(!dir.join("approved.json").exists());
    assert_eq!(questions_json(&sb, &[]).len(), 1);
    let done = run(
        &mut operator(
            &sb,
            &["deny", "g-1", "--reason", "  two spaces, then\ttab  "],
        ),
        "deny",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    let gate = waiter.finish("gate");
    assert_eq!(gate.code, Some(4), "{gate:?}");
    assert_eq!(gate.stderr, "  two spaces, then\ttab  \n", "word for word");
    assert_eq!(gate.stdout, "");
    let h = history(&dir);
    assert_eq!(h.len(), 2);
    assert_eq!(h[1]["decision"]["approved"], false);
    assert!(!dir.join("approval.json").exists() && !dir.join("approved.json").exists());
}

#[test]
fn progress_is_validated_and_replaced_atomically() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "pr-1", "p", std::process::id());
    let d = dir.to_str().unwrap();
    for bad in [
        &["progress", "101"][..],
        &["progress", "-5"],
        &["progress", "--step", "6", "--of", "5"],
        &["progress"],
    ] {
        let mut args = bad.to_vec();
        args.extend(["--job-dir", d]);
        let done = run(&mut agent(&sb, &args), "progress");
        assert_ne!(done.code, Some(0), "{bad:?}: {done:?}");
        assert!(!dir.join("progress.json").exists(), "{bad:?}");
    }
    let done = run(
        &mut agent(&sb, &["progress", "12.5", "--eta", "2m", "--job-dir", d]),
        "progress",
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    let p = read_json(&dir.join("progress.json"));
    assert_eq!(p["percent"], 12.5);
    assert_eq!(p["eta_seconds"], 120);
    assert!(p["updated_at"].is_string());
    assert_eq!(
        jobs_entry(&sb, "pr-1")["progress"],
        json!({"percent": 12.5, "step": null, "total_steps": null, "step_name": null})
    );
    assert!(leftovers(&dir).is_empty());
}

// ---------------------------------------------------------------------------------------------
// 7. Instances: every question and gate has an id, and an answer names the one it answers
// ---------------------------------------------------------------------------------------------

/// `luzia ask` with `args`, in `dir`, as a running agent.
fn asking(sb: &Sandbox, dir: &Path, args: &[&str]) -> Running {
    let mut all = vec!["ask"];
    all.extend_from_slice(args);
    all.extend(["--job-dir", dir.to_str().unwrap()]);
    Running::spawn(&mut agent(sb, &all))
}

/// `luzia gate` with `args`, in `dir`, as a running agent.
fn gating(sb: &Sandbox, dir: &Path, args: &[&str]) -> Running {
    let mut all = vec!["gate"];
    all.extend_from_slice(args);
    all.extend(["--job-dir", dir.to_str().unwrap()]);
    Running::spawn(&mut agent(sb, &all))
}

/// `luzia --jobs-dir ROOT <args>` as `USER=user`.
fn as_user(sb: &Sandbox, user: &str, args: &[&str]) -> Done {
    run(operator(sb, args).env("USER", user), args[0])
}

#[test]
fn an_answer_aimed_at_a_settled_question_is_refused_and_says_who_settled_it() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "inst-1", "p", std::process::id());
    let first = asking(&sb, &dir, &["First?", "-o", "alpha", "-o", "bravo"]);
    let item = wait_for_item(&sb, "inst-1", "question", |_| true);
    assert_eq!(item["question"]["id"], "q1");
    let done = as_user(
        &sb,
        "first",
        &["answer", "inst-1", "--question", "q1", "alpha"],
    );
    assert_eq!(
        (done.code, done.stdout.as_str()),
        (Some(0), "answered inst-1: alpha\n")
    );
    assert!(!done.stderr.contains("the one pending"), "{done:?}");
    assert_eq!(first.finish("ask").stdout, "alpha\n");

    // The next question is q2: an answer meant for q1 is refused and lands nowhere.
    let second = asking(&sb, &dir, &["Second?", "-o", "alpha", "-o", "bravo"]);
    let item = wait_for_item(&sb, "inst-1", "question", |i| i["question"]["id"] == "q2");
    assert_eq!(item["question"]["question"], "Second?");
    let late = as_user(
        &sb,
        "late",
        &["answer", "inst-1", "--question", "q1", "bravo"],
    );
    assert_eq!(late.code, Some(1), "{late:?}");
    assert_eq!(late.stdout, "");
    assert!(
        late.stderr
            .contains("question q1 of job inst-1 was already answered by first@")
            && late.stderr.contains("(cli): 'alpha'"),
        "{late:?}"
    );
    assert!(
        !dir.join("response.json").exists(),
        "nothing written for q2"
    );
    let listed = stdout_of(&sb.luzia().arg("questions").output().unwrap());
    assert!(
        listed.contains(" q2 "),
        "the id to aim at is listed: {listed}"
    );

    // Without --question: the question pending now, and which one it was.
    let now = as_user(&sb, "now", &["answer", "inst-1", "bravo"]);
    assert_eq!(now.code, Some(0), "{now:?}");
    assert!(
        now.stderr.contains("question q2 was the one pending"),
        "{now:?}"
    );
    assert_eq!(second.finish("ask").stdout, "bravo\n");
    assert!(leftovers(&dir).is_empty() && !dir.join("response.json").exists());
}

#[test]
fn an_answer_for_a_question_that_timed_out_or_was_never_asked_says_so() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "inst-1", "p", std::process::id());
    let first = asking(&sb, &dir, &["First?", "--timeout", "100ms"]);
    assert_eq!(first.finish("ask").code, Some(3));
    let done = as_user(&sb, "late", &["answer", "inst-1", "--question", "q1", "x"]);
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(
        done.stderr.contains(
            "question q1 of job inst-1 is no longer pending: it timed out with no answer"
        ),
        "{done:?}"
    );
    let done = as_user(&sb, "late", &["answer", "inst-1", "--question", "q9", "x"]);
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(
        done.stderr.contains("no answer to it is on record"),
        "{done:?}"
    );
    assert!(leftovers(&dir).is_empty() && !dir.join("response.json").exists());
}

#[test]
fn a_decision_for_a_settled_gate_never_lands_on_the_next_of_the_same_name() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "inst-2", "p", std::process::id());
    let staging = gating(&sb, &dir, &["deploy", "Deploy to staging"]);
    let item = wait_for_item(&sb, "inst-2", "approval", |_| true);
    assert_eq!(item["approval"]["id"], "g1");
    let done = as_user(&sb, "first", &["approve", "inst-2", "--gate", "g1"]);
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(done.stdout, "approved inst-2 at gate 'deploy'\n");
    assert_eq!(staging.finish("gate").code, Some(0));

    let mut production = gating(&sb, &dir, &["deploy", "Deploy to PRODUCTION"]);
    wait_for_item(&sb, "inst-2", "approval", |i| i["approval"]["id"] == "g2");
    for verb in [
        &["approve", "inst-2", "--gate", "g1"][..],
        &["deny", "inst-2", "--gate", "g1", "--reason", "late"],
    ] {
        let late = as_user(&sb, "late", verb);
        assert_eq!(late.code, Some(1), "{verb:?}: {late:?}");
        assert!(
            late.stderr
                .contains("gate 'deploy' (g1) of job inst-2 was already approved by first@"),
            "{late:?}"
        );
        assert!(!dir.join("approved.json").exists(), "nothing for g2");
    }
    assert!(production.alive(), "the production gate still waits");
    let done = as_user(&sb, "second", &["deny", "inst-2", "--reason", "not today"]);
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(
        done.stderr
            .contains("gate 'deploy' (g2) was the one pending"),
        "{done:?}"
    );
    let production = production.finish("gate");
    assert_eq!(
        (production.code, production.stderr.as_str()),
        (Some(4), "not today\n")
    );
    // Asked again about g2: denied, by whom, and why.
    let again = as_user(&sb, "late", &["approve", "inst-2", "--gate", "g2"]);
    assert!(
        again
            .stderr
            .contains("(g2) of job inst-2 was already denied by second@")
            && again.stderr.contains(": 'not today'"),
        "{again:?}"
    );
    let h = history(&dir);
    assert_eq!(h[1]["approval"]["id"], "g2");
    assert_eq!(h[1]["decision"]["gate_id"], "g2");
    assert_eq!(h[1]["decision"]["token"].as_str().map(str::len), Some(32));
}

#[test]
fn a_hand_written_gate_gets_an_id_that_changes_when_it_is_written_again() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "inst-3", "p", std::process::id());
    let gate = json!({"gate": "deploy", "description": "Deploy"}).to_string();
    put_atomic(&dir, "approval.json", &gate);
    let first = wait_for_item(&sb, "inst-3", "approval", |_| true)["approval"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(first.starts_with("g-"), "{first}");
    put_atomic(&dir, "approval.json", &gate);
    let second = questions_json(&sb, &[])[0]["approval"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(
        first, second,
        "the same words written again are another gate"
    );
    let stale = as_user(&sb, "op", &["approve", "inst-3", "--gate", &first]);
    assert_eq!(stale.code, Some(1), "{stale:?}");
    assert!(stale.stderr.contains("is no longer pending"), "{stale:?}");
    assert!(!dir.join("approved.json").exists());
    let done = as_user(&sb, "op", &["approve", "inst-3", "--gate", &second]);
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        read_json(&dir.join("approved.json"))["gate_id"],
        json!(second)
    );
}

/// Item 1 made deterministic: an operator reads the gate pending and its link() is held back
/// (strace) until the agent has approved by itself and archived the gate. Its link then lands on
/// the empty name: it must take its file back and say the gate was approved automatically.
#[test]
fn a_decision_linked_after_the_auto_approval_is_taken_back_and_says_so() {
    if !strace_usable() {
        eprintln!("skipped: strace is missing or cannot trace here");
        return;
    }
    let sb = Sandbox::new();
    let dir = live_job(&sb, "inst-4", "p", std::process::id());
    let gate = gating(
        &sb,
        &dir,
        &["deploy", "Deploy", "--auto-approve-after", "300ms"],
    );
    wait_until("the gate", || dir.join("approval.json").exists());
    let mut cmd = Command::new("strace");
    isolate(&mut cmd, &sb);
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=linkat", "-e"])
        .arg("inject=linkat:delay_enter=1500000")
        .arg(LUZIA)
        .arg("--jobs-dir")
        .arg(&sb.root)
        .args(["deny", "inst-4", "--gate", "g1", "--reason", "no"])
        .env("USER", "slow");
    let slow = Running::spawn(&mut cmd);
    let gate = gate.finish("gate");
    assert_eq!(gate.code, Some(0), "{gate:?}");
    assert!(gate.stderr.contains("approved automatically"), "{gate:?}");
    let slow = slow.finish("deny");
    assert_eq!(slow.code, Some(1), "{slow:?}");
    assert_eq!(slow.stdout, "", "never told it denied");
    assert!(
        slow.stderr.contains("was already approved by auto"),
        "{slow:?}"
    );
    assert!(
        !dir.join("approved.json").exists(),
        "its file did not outlive its refusal"
    );
    assert!(leftovers(&dir).is_empty());
}

/// Item 4: ids count on past a history of several MiB, and a line of 20 KiB is read back.
#[test]
fn ids_never_restart_however_long_the_history() {
    let sb = Sandbox::new();
    let dir = live_job(&sb, "inst-5", "p", std::process::id());
    let mut text = String::new();
    for i in 0..60_000 {
        text.push_str(&format!(
            "{{\"progress\":{{\"percent\":{}}},\"at\":\"t\"}}\n",
            i % 100
        ));
    }
    for q in 1..=5 {
        let answer = if q == 5 {
            "z".repeat(20 * 1024)
        } else {
            "a".into()
        };
        let record = json!({"clarification": {"id": format!("q{q}"), "question": "?"},
            "response": {"question_id": format!("q{q}"), "answer": answer,
                "answered_by": "long@h", "source": "cli"}});
        text.push_str(&format!("{record}\n"));
    }
    fs::write(dir.join("history.jsonl"), &text).unwrap();
    assert!(text.len() > 2 << 20);
    let ask = asking(&sb, &dir, &["Next?", "--timeout", "50ms"]);
    assert_eq!(ask.finish("ask").code, Some(3));
    assert_eq!(history(&dir).last().unwrap()["clarification"]["id"], "q6");
    let done = as_user(&sb, "op", &["answer", "inst-5", "--question", "q5", "y"]);
    assert_eq!(done.code, Some(1), "{done:?}");
    assert!(
        done.stderr.contains("already answered by long@h"),
        "{done:?}"
    );
}
