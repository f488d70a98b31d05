//! Decisions racing one another and the agent's own default, with real processes: a real
//! `luzia ask` / `luzia gate` waits with `--timeout` / `--auto-approve-after`, and 8 or 32
//! `luzia answer` / `approve` / `deny` processes (different users and decisions, or one user and
//! one value) are released together at about the moment the agent's default fires. Every round
//! must end with exactly one winner (counting the agent's default), the agent acting on the
//! winner's decision, every loser exiting non-zero and told the decision that stands and who made
//! it, one record in the history, and nothing else left in the job directory.
//!
//! A second question or gate asked after the first is settled never receives what was meant for
//! the first.
//!
//! Rounds run one after the other; the deciders of a round run in parallel. Violations are
//! counted over all rounds and reported together, so a failure says how often it happened. The
//! only clocks are the release moment (spread around the agent's deadline, to mix the outcomes)
//! and hang guards: nothing asserts how fast anything is.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const LUZIA: &str = env!("CARGO_BIN_EXE_luzia");

/// When the agent's own default fires, after it asks.
const DEFAULT_AFTER_MS: u64 = 100;

/// How much earlier than the agent's deadline the deciders are released, round by round: the
/// time a decider needs to start and publish varies with the load, so the spread makes both
/// outcomes (a decider first, the default first) happen.
const LEADS_MS: [u64; 6] = [0, 10, 20, 30, 45, 60];

const OPTIONS: [&str; 8] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
];

/// The files a job directory holds once an exchange is over.
const AT_REST: [&str; 3] = ["meta.json", "pid", "history.jsonl"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Question,
    Gate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Users {
    /// `op0`, `op1`, ...: each with a decision of its own.
    Different,
    /// All `ops`, all with the same decision, released within the same second.
    One,
}

/// What one decider sends.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Want {
    Answer(String),
    Approve(String),
    Deny(String),
}

impl Want {
    fn args(&self) -> Vec<&str> {
        match self {
            Want::Answer(a) => vec![a],
            Want::Approve(r) | Want::Deny(r) => vec!["--reason", r],
        }
    }

    fn verb(&self) -> &'static str {
        match self {
            Want::Answer(_) => "answer",
            Want::Approve(_) => "approve",
            Want::Deny(_) => "deny",
        }
    }
}

fn want(kind: Kind, users: Users, i: usize) -> Want {
    match (kind, users) {
        (Kind::Question, Users::Different) => Want::Answer(OPTIONS[i % OPTIONS.len()].into()),
        (Kind::Question, Users::One) => Want::Answer("bravo".into()),
        (Kind::Gate, Users::Different) if i.is_multiple_of(2) => Want::Approve(format!("go {i}")),
        (Kind::Gate, Users::Different) => Want::Deny(format!("stop {i}")),
        (Kind::Gate, Users::One) => Want::Approve("go".into()),
    }
}

fn user(users: Users, i: usize) -> String {
    match users {
        Users::Different => format!("op{i}"),
        Users::One => "ops".into(),
    }
}

/// The environment of the sandbox, for processes that are not started by `Sandbox::luzia_std`.
fn isolate(cmd: &mut Command, sb: &Sandbox) {
    cmd.env_remove("LUZIA_JOBS_DIR")
        .env_remove("LUZIA_CONFIG")
        .env_remove("LUZIA_JOB_DIR")
        .env("XDG_CONFIG_HOME", &sb.xdg)
        .env("NO_COLOR", "1")
        .env("TZ", "UTC");
}

/// A job whose agent is the test process itself (alive for as long as any round runs).
fn live_job(sb: &Sandbox, id: &str) -> PathBuf {
    let meta = json!({"id": id, "project": "race", "task": "decide", "started": now_rfc3339()});
    sb.write(id, "meta.json", meta.to_string());
    sb.write(id, "pid", format!("{}\n", std::process::id()));
    sb.job_dir(id)
}

/// Polls `cond` every millisecond; past the hang guard the test fails, saying what it waited for.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG_GUARD;
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits for a child (polling often: many end at once), killing it past the hang guard.
fn finish(guard: &mut ChildGuard, what: &str) -> ExitStatus {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        if let Some(status) = guard.child().try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= deadline {
            guard.kill_and_reap();
            panic!("{what} did not end within {HANG_GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A finished process: exit code and what it printed.
#[derive(Debug, Clone)]
struct Done {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn read_text(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

/// One operator, started ahead of the round and blocked in `read` until the instance id is
/// written to its stdin: the line is both the id to aim at and the starting gun. Its output goes
/// to files, so nothing has to drain pipes while 32 of them run.
struct Decider {
    guard: ChildGuard,
    stdin: Option<ChildStdin>,
    out: PathBuf,
    err: PathBuf,
    user: String,
    want: Want,
}

/// `answer JOB --question ID ANSWER`, `approve JOB --gate ID --reason R`, ...
const DECIDER_SCRIPT: &str = r#"echo ready; read id
exec "$LUZIA" --jobs-dir "$ROOT" "$VERB" "$JOB" "$FLAG" "$id" "$@" >"$OUT" 2>"$ERR""#;

impl Decider {
    fn spawn(sb: &Sandbox, job: &str, kind: Kind, n: usize, user: String, want: Want) -> Decider {
        let dir = sb.tmp.path().join("deciders");
        fs::create_dir_all(&dir).unwrap();
        let (out, err) = (dir.join(format!("{n}.out")), dir.join(format!("{n}.err")));
        let flag = match kind {
            Kind::Question => "--question",
            Kind::Gate => "--gate",
        };
        let mut cmd = Command::new("sh");
        isolate(&mut cmd, sb);
        cmd.arg("-c")
            .arg(DECIDER_SCRIPT)
            .arg("sh")
            .args(want.args())
            .env("LUZIA", LUZIA)
            .env("ROOT", &sb.root)
            .env("VERB", want.verb())
            .env("JOB", job)
            .env("FLAG", flag)
            .env("OUT", &out)
            .env("ERR", &err)
            .env("USER", &user)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn sh");
        let stdin = child.stdin.take();
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready, "ready\n");
        Decider {
            guard: ChildGuard::new(child),
            stdin,
            out,
            err,
            user,
            want,
        }
    }

    fn release(&mut self, id: &str) {
        let mut stdin = self.stdin.take().expect("released once");
        stdin.write_all(format!("{id}\n").as_bytes()).unwrap();
    }

    fn finish(mut self) -> (Done, String, Want) {
        let status = finish(&mut self.guard, "a decider");
        let done = Done {
            code: status.code(),
            stdout: read_text(&self.out),
            stderr: read_text(&self.err),
        };
        (done, self.user, self.want)
    }
}

/// The agent's side: a real `luzia ask` or `luzia gate` with its own default.
fn spawn_agent(sb: &Sandbox, dir: &Path, kind: Kind, round: usize) -> (ChildGuard, PathBuf) {
    let out = sb.tmp.path().join("agent");
    fs::create_dir_all(&out).unwrap();
    let after = format!("{DEFAULT_AFTER_MS}ms");
    let mut args: Vec<String> = match kind {
        Kind::Question => {
            let mut a = vec!["ask".into(), format!("Which one? (round {round})")];
            for o in OPTIONS {
                a.extend(["--option".into(), o.into()]);
            }
            a.extend([
                "--timeout".into(),
                after,
                "--default".into(),
                "alpha".into(),
            ]);
            a
        }
        Kind::Gate => vec![
            "gate".into(),
            "deploy".into(),
            format!("Deploy round {round} to staging"),
            "--auto-approve-after".into(),
            after,
        ],
    };
    args.extend(["--job-dir".into(), dir.display().to_string()]);
    let mut cmd = Command::new(LUZIA);
    isolate(&mut cmd, sb);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(fs::File::create(out.join("out")).unwrap())
        .stderr(fs::File::create(out.join("err")).unwrap());
    (ChildGuard::new(cmd.spawn().expect("spawn luzia")), out)
}

fn request_file(kind: Kind) -> &'static str {
    match kind {
        Kind::Question => "clarification.json",
        Kind::Gate => "approval.json",
    }
}

/// Waits for the agent's request and returns its instance id (empty if it names none).
fn wait_for_request(dir: &Path, kind: Kind) -> String {
    let path = dir.join(request_file(kind));
    let mut id = None;
    wait_until("the agent's request", || {
        id = fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| v["id"].as_str().unwrap_or_default().to_owned());
        id.is_some()
    });
    id.unwrap()
}

/// history.jsonl's exchanges (questions and gates; progress and stale records aside).
fn exchanges(dir: &Path) -> Vec<Value> {
    read_text(&dir.join("history.jsonl"))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r.get("clarification").is_some() || r.get("approval").is_some())
        .collect()
}

/// The decision that stands, as the history recorded it.
#[derive(Debug)]
struct Standing {
    by: String,
    source: String,
    approved: Option<bool>,
    /// The answer, or the reason of a decision.
    text: String,
}

impl Standing {
    fn of(record: &Value) -> Option<Standing> {
        let (d, approved, text) = if let Some(r) = record.get("response").filter(|r| !r.is_null()) {
            (r, None, r["answer"].as_str()?)
        } else {
            let d = record.get("decision")?;
            (d, d["approved"].as_bool(), d["reason"].as_str()?)
        };
        let by = d
            .get("answered_by")
            .or(d.get("decided_by"))
            .and_then(Value::as_str)?;
        Some(Standing {
            by: by.to_owned(),
            source: d["source"].as_str()?.to_owned(),
            approved,
            text: text.to_owned(),
        })
    }

    fn by_default(&self) -> bool {
        self.source == "auto" || self.source == "timeout"
    }

    /// Whether decider `user` sending `want` is who decided this.
    fn is(&self, user: &str, want: &Want) -> bool {
        let same = match want {
            Want::Answer(a) => self.approved.is_none() && self.text == *a,
            Want::Approve(r) => self.approved == Some(true) && self.text == *r,
            Want::Deny(r) => self.approved == Some(false) && self.text == *r,
        };
        same && self.source == "cli" && self.by.starts_with(&format!("{user}@"))
    }

    /// What a loser must be told: the decision, and who made it.
    fn told(&self, stderr: &str) -> bool {
        let who = if self.by_default() {
            self.by.clone()
        } else {
            format!("{}@", self.by.split('@').next().unwrap_or_default())
        };
        let said = match self.approved {
            None => {
                stderr.contains(&format!("answered by {who}"))
                    && stderr.contains(&format!("'{}'", self.text))
            }
            Some(true) => stderr.contains(&format!("approved by {who}")),
            Some(false) => stderr.contains(&format!("denied by {who}")),
        };
        said && !stderr.contains("unreadable") && !stderr.contains("someone")
    }
}

/// Whether the agent acted on `s`: what it printed and how it exited.
fn agent_acted_on(kind: Kind, agent: &Done, s: &Standing) -> bool {
    match kind {
        Kind::Question => {
            let said = if s.by_default() {
                agent
                    .stderr
                    .contains("no answer in time: using the default")
            } else {
                agent.stderr.contains(&format!("answered by {}", s.by))
            };
            agent.code == Some(0) && agent.stdout == format!("{}\n", s.text) && said
        }
        Kind::Gate if s.approved == Some(false) => {
            agent.code == Some(4) && agent.stderr == format!("{}\n", s.text)
        }
        Kind::Gate if s.by_default() => {
            agent.code == Some(0) && agent.stderr.contains("approved automatically")
        }
        Kind::Gate => {
            agent.code == Some(0) && agent.stderr.contains(&format!("approved by {}", s.by))
        }
    }
}

/// What the directory holds beyond a job at rest; removed, so the next round starts clean.
fn strays(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if !AT_REST.contains(&name.as_str()) {
            let _ = fs::remove_file(dir.join(&name));
            found.push(name);
        }
    }
    found
}

/// Violations by kind, each with the rounds that showed it.
#[derive(Default)]
struct Tally {
    /// Round being judged.
    round: usize,
    /// By kind of violation: the rounds that showed it, each with its first example.
    violations: BTreeMap<&'static str, BTreeMap<usize, String>>,
    outcomes: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn add(&mut self, what: &'static str, detail: String) {
        self.violations
            .entry(what)
            .or_default()
            .entry(self.round)
            .or_insert(detail);
    }

    fn assert_clean(&self, what: &str, rounds: usize, elapsed: Duration) {
        eprintln!(
            "{what}: {rounds} rounds in {elapsed:.1?}; outcomes {:?}",
            self.outcomes
        );
        if self.violations.is_empty() {
            return;
        }
        let mut report = format!("{what}:\n");
        for (kind, rounds_seen) in &self.violations {
            report.push_str(&format!(
                "  {kind}: in {} of {rounds} rounds, e.g. {}\n",
                rounds_seen.len(),
                rounds_seen
                    .values()
                    .take(2)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
        }
        panic!("{report}");
    }
}

/// Runs `rounds` rounds of `deciders` deciders against the agent's own default.
fn race(kind: Kind, deciders: usize, users: Users, rounds: usize) {
    let started = Instant::now();
    let sb = Sandbox::new();
    let job = "race-1";
    let dir = live_job(&sb, job);
    let mut tally = Tally::default();
    let mut ids = BTreeSet::new();
    for round in 0..rounds {
        tally.round = round;
        let mut racers: Vec<Decider> = (0..deciders)
            .map(|i| {
                let u = user(users, i);
                Decider::spawn(&sb, job, kind, i, u, want(kind, users, i))
            })
            .collect();
        let (mut agent, agent_out) = spawn_agent(&sb, &dir, kind, round);
        let id = wait_for_request(&dir, kind);
        let seen = Instant::now();
        let lead = Duration::from_millis(LEADS_MS[round % LEADS_MS.len()]);
        let release = (seen + Duration::from_millis(DEFAULT_AFTER_MS)).checked_sub(lead);
        if let Some(at) = release {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
        }
        for r in racers.iter_mut() {
            r.release(&id);
        }
        let results: Vec<(Done, String, Want)> = racers.into_iter().map(Decider::finish).collect();
        let status = finish(&mut agent, "the agent");
        let agent = Done {
            code: status.code(),
            stdout: read_text(&agent_out.join("out")),
            stderr: read_text(&agent_out.join("err")),
        };
        let ctx = format!("round {round} ({id})");
        judge(&mut tally, &ctx, kind, &dir, round, &agent, &results);
        if !id.is_empty() && !ids.insert(id.clone()) {
            tally.add("an instance id was used twice", ctx);
        }
    }
    let what = format!("{kind:?}, {deciders} deciders, {users:?} users");
    tally.assert_clean(&what, rounds, started.elapsed());
}

/// What each decider of a round did: how it ended, as whom, sending what.
type Results = [(Done, String, Want)];

/// Checks one round: one winner, the agent on its side, the losers told, nothing left over.
fn judge(
    tally: &mut Tally,
    ctx: &str,
    kind: Kind,
    dir: &Path,
    round: usize,
    agent: &Done,
    results: &Results,
) {
    let history = exchanges(dir);
    if history.len() != round + 1 {
        tally.add(
            "the history does not hold one record per round",
            format!("{ctx}: {} records", history.len()),
        );
    }
    let Some(standing) = history.last().and_then(Standing::of) else {
        tally.add("no decision recorded", format!("{ctx}: agent {agent:?}"));
        return;
    };
    check_strays(tally, ctx, dir);
    let outcome = if standing.by_default() {
        "the agent's default won"
    } else {
        "a decider won"
    };
    *tally.outcomes.entry(outcome).or_default() += 1;
    if !agent_acted_on(kind, agent, &standing) {
        tally.add(
            "the agent did not act on the decision that stands",
            format!("{ctx}: stands {standing:?}, agent {agent:?}"),
        );
    }
    check_winners(tally, ctx, results, &standing);
    check_losers(tally, ctx, results, &standing);
}

fn check_strays(tally: &mut Tally, ctx: &str, dir: &Path) {
    let stray = strays(dir);
    if !stray.is_empty() {
        tally.add(
            "files left in the job directory",
            format!("{ctx}: {stray:?}"),
        );
    }
}

/// Exactly one winner counting the agent's default, and a decider told it won is the one.
fn check_winners(tally: &mut Tally, ctx: &str, results: &Results, standing: &Standing) {
    let winners: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].0.code == Some(0))
        .collect();
    let default_won = usize::from(standing.by_default());
    match winners.len() + default_won {
        1 => {}
        0 => tally.add("no winner", format!("{ctx}: stands {standing:?}")),
        n => tally.add(
            "more than one winner",
            format!(
                "{ctx}: {n} winners (default {default_won}, deciders {winners:?}): {:?}",
                winners.iter().map(|&i| &results[i].0).collect::<Vec<_>>()
            ),
        ),
    }
    for &w in &winners {
        let (done, user, want) = &results[w];
        if !standing.is(user, want) {
            tally.add(
                "a decider was told it decided, yet another decision stands",
                format!("{ctx}: {user} {want:?} {done:?}, stands {standing:?}"),
            );
        }
    }
}

/// Every loser ended by itself, non-zero, told what stands and who decided it.
fn check_losers(tally: &mut Tally, ctx: &str, results: &Results, standing: &Standing) {
    for (done, user, _) in results.iter().filter(|r| r.0.code != Some(0)) {
        if done.code.is_none() || !standing.told(&done.stderr) {
            tally.add(
                "a loser was not told the decision that stands and who made it",
                format!("{ctx}: {user}: {done:?}, stands {standing:?}"),
            );
        }
    }
}

#[test]
fn eight_deciders_and_the_timeout_race_on_questions() {
    race(Kind::Question, 8, Users::Different, 200);
}

#[test]
fn thirty_two_deciders_and_the_timeout_race_on_questions() {
    race(Kind::Question, 32, Users::Different, 200);
}

#[test]
fn eight_deciders_and_auto_approval_race_on_gates() {
    race(Kind::Gate, 8, Users::Different, 200);
}

#[test]
fn thirty_two_deciders_and_auto_approval_race_on_gates() {
    race(Kind::Gate, 32, Users::Different, 200);
}

#[test]
fn one_user_answering_the_same_within_a_second() {
    race(Kind::Question, 8, Users::One, 200);
}

#[test]
fn one_user_approving_within_a_second() {
    race(Kind::Gate, 8, Users::One, 200);
}

// ---------------------------------------------------------------------------------------------
// A second question or gate after the first
// ---------------------------------------------------------------------------------------------

/// An agent that asks twice in a row: the first request waits for a person, the second (asked
/// the moment the first is settled, same name) is settled only by the agent's own default.
const TWICE: &str = r#"
"$LUZIA" "$@" "$FIRST" --job-dir "$DIR" >"$OUT/1.out" 2>"$OUT/1.err"; echo $? >"$OUT/1.rc"
"$LUZIA" "$@" "$SECOND" --job-dir "$DIR" $DEFAULT 150ms $VALUE >"$OUT/2.out" 2>"$OUT/2.err"
echo $? >"$OUT/2.rc"
"#;

fn spawn_twice(sb: &Sandbox, dir: &Path, kind: Kind, out: &Path) -> ChildGuard {
    let _ = fs::remove_dir_all(out);
    fs::create_dir_all(out).unwrap();
    let mut cmd = Command::new("sh");
    isolate(&mut cmd, sb);
    cmd.arg("-c").arg(TWICE).arg("sh");
    match kind {
        Kind::Question => {
            cmd.args([
                "ask", "-o", "alpha", "-o", "bravo", "-o", "charlie", "-o", "delta",
            ])
            .args(["-o", "echo", "-o", "foxtrot", "-o", "golf", "-o", "hotel"])
            .env("FIRST", "Which database, for staging?")
            .env("SECOND", "Which database, for PRODUCTION?")
            .env("DEFAULT", "--timeout")
            .env("VALUE", "--default=hotel");
        }
        Kind::Gate => {
            cmd.args(["gate", "deploy"])
                .env("FIRST", "Deploy to staging")
                .env("SECOND", "Deploy to PRODUCTION")
                .env("DEFAULT", "--auto-approve-after")
                .env("VALUE", "");
        }
    }
    cmd.env("LUZIA", LUZIA)
        .env("DIR", dir)
        .env("OUT", out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    ChildGuard::new(cmd.spawn().expect("spawn sh"))
}

/// `rounds` rounds: 8 deciders aimed at the first request, released a few milliseconds apart so
/// that the late ones arrive while the second is being asked. The first goes to one of them;
/// the second must be settled by the agent's default, whatever the late ones sent.
fn second_after_first(kind: Kind, rounds: usize) {
    let started = Instant::now();
    let sb = Sandbox::new();
    let job = "twice-1";
    let dir = live_job(&sb, job);
    let out = sb.tmp.path().join("twice");
    let mut tally = Tally::default();
    for round in 0..rounds {
        tally.round = round;
        let mut racers: Vec<Decider> = (0..8)
            .map(|i| {
                let u = user(Users::Different, i);
                Decider::spawn(&sb, job, kind, i, u, want(kind, Users::Different, i))
            })
            .collect();
        let mut agent = spawn_twice(&sb, &dir, kind, &out);
        let first = wait_for_request(&dir, kind);
        let step = Duration::from_millis(1 + (round % 6) as u64);
        for r in racers.iter_mut() {
            r.release(&first);
            std::thread::sleep(step);
        }
        let results: Vec<(Done, String, Want)> = racers.into_iter().map(Decider::finish).collect();
        finish(&mut agent, "the agent script");
        let ctx = format!("round {round} ({first})");
        judge_twice(&mut tally, &ctx, kind, &dir, &out, &results);
    }
    let what = format!("{kind:?}: a second one after the first");
    tally.assert_clean(&what, rounds, started.elapsed());
}

/// Checks one round of [`second_after_first`]: the first settled by exactly one decider, every
/// other told so; the second settled by the agent's default alone, and the agent acting on it.
fn judge_twice(
    tally: &mut Tally,
    ctx: &str,
    kind: Kind,
    dir: &Path,
    out: &Path,
    results: &Results,
) {
    let history = exchanges(dir);
    let [.., one, two] = history.as_slice() else {
        tally.add(
            "the history lacks an exchange",
            format!("{ctx}: {history:?}"),
        );
        return;
    };
    let (Some(first), Some(second)) = (Standing::of(one), Standing::of(two)) else {
        tally.add("no decision recorded", format!("{ctx}: {one} {two}"));
        return;
    };
    check_strays(tally, ctx, dir);
    let agent = Done {
        code: read_text(&out.join("2.rc")).trim().parse().ok(),
        stdout: read_text(&out.join("2.out")),
        stderr: read_text(&out.join("2.err")),
    };
    let outcome = if second.by_default() {
        "the second settled by its default"
    } else {
        tally.add(
            "the second received a decision meant for the first",
            format!("{ctx}: second {second:?}"),
        );
        "the second settled by a decider"
    };
    *tally.outcomes.entry(outcome).or_default() += 1;
    if second.by_default() && !agent_acted_on(kind, &agent, &second) {
        tally.add(
            "the agent did not act on the decision that stands",
            format!("{ctx}: second {second:?}, agent {agent:?}"),
        );
    }
    check_winners(tally, ctx, results, &first);
    check_losers(tally, ctx, results, &first);
}

#[test]
fn a_second_gate_of_the_same_name_never_receives_a_decision_meant_for_the_first() {
    second_after_first(Kind::Gate, 100);
}

#[test]
fn a_second_question_never_receives_an_answer_meant_for_the_first() {
    second_after_first(Kind::Question, 100);
}
