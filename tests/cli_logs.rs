//! `luzia logs`: the end of a log, sanitized; and `-f` against real writer processes that
//! append, truncate, replace, print a mid-way exit line, or die without one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::path::Path;

use common::*;

const OLD_META: &str = r#"{"project": "p", "task": "t", "started": "2025-06-01T00:00:00Z"}"#;

// ---------------------------------------------------------------------------------------------
// 6. The end of a log
// ---------------------------------------------------------------------------------------------

#[test]
fn last_n_lines_exactly() {
    let sb = Sandbox::with_samples();
    let out = sb
        .luzia()
        .args(["logs", "143002-c3d4", "-n", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out),
        "ModuleNotFoundError: No module named 'alembic'\n\nexit:1\n"
    );
    let out = sb
        .luzia()
        .args(["logs", "142315-a1b2", "--lines", "1"])
        .output()
        .unwrap();
    assert_eq!(stdout_of(&out), "exit:0\n");
    // More lines asked than there are: the whole log.
    let out = sb
        .luzia()
        .args(["logs", "150110-e5f6", "-n", "100"])
        .output()
        .unwrap();
    assert_eq!(stdout_of(&out), "indexing 1/40\nindexing 2/40\n\nexit:-9\n");
}

#[test]
fn hostile_output_never_reaches_the_terminal() {
    let sb = Sandbox::with_samples();
    for no_color in [true, false] {
        let mut cmd = sb.luzia();
        if !no_color {
            // Without NO_COLOR: stdout is a pipe, so still no escapes at all.
            cmd.env_remove("NO_COLOR");
        }
        let out = cmd.args(["logs", "155500-evil"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let bytes = &out.stdout;
        assert!(!bytes.contains(&0x1b), "ESC in {:?}", stdout_of(&out));
        assert!(!bytes.contains(&0x07), "BEL in {:?}", stdout_of(&out));
        let text = stdout_of(&out);
        assert!(!text.contains("pwned"), "the OSC title leaked: {text:?}");
        assert!(!text.contains("ZXZpbA=="), "the clipboard write leaked");
        assert_eq!(
            text,
            "normal line\nclipboard?\ncleared?\nred is fine\nbad utf8: \u{fffd}\u{fffd}\n100%\n\nexit:3\n"
        );

        // The task (an OSC title in meta.json) and the tail in `jobs`, too.
        for args in [&["jobs"][..], &["jobs", "155500-evil"], &["jobs", "--json"]] {
            let mut cmd = sb.luzia();
            if !no_color {
                cmd.env_remove("NO_COLOR");
            }
            let out = cmd.args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            assert!(!out.stdout.contains(&0x1b), "ESC from {args:?}");
            assert!(!out.stdout.contains(&0x07), "BEL from {args:?}");
            if !args.contains(&"--json") {
                assert!(
                    !stdout_of(&out).contains("pwned"),
                    "title text from {args:?}"
                );
            }
        }
    }
}

#[test]
fn last_five_of_twenty_thousand_lines() {
    let sb = Sandbox::new();
    sb.write("big", "meta.json", OLD_META);
    let log: String = (0..20_000).map(|i| format!("line {i:05}\n")).collect();
    sb.write("big", "output.log", log);
    let out = sb
        .luzia()
        .args(["logs", "big", "-n", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout_of(&out),
        "line 19995\nline 19996\nline 19997\nline 19998\nline 19999\n"
    );
    // The default is 50 lines.
    let out = sb.luzia().args(["logs", "big"]).output().unwrap();
    let lines: Vec<String> = stdout_of(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 50);
    assert_eq!(lines[0], "line 19950");
}

#[test]
fn a_missing_log_says_there_is_no_output_yet() {
    let sb = Sandbox::with_samples();
    let out = sb.luzia().args(["logs", "154000-void"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_of(&out), "");
    let err = stderr_of(&out);
    assert!(err.contains("no output yet"), "{err}");
    assert!(err.contains("154000-void"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// 7. Following with real writers
// ---------------------------------------------------------------------------------------------

/// A job whose agent is `writer`: meta.json, an output.log holding `start`, and the writer's pid.
/// The writer waits for the file `$GO` before writing anything, so the follow starts first.
fn follow_job(sb: &Sandbox, id: &str, writer_body: &str) -> (ChildGuard, std::path::PathBuf) {
    sb.write(id, "meta.json", OLD_META);
    sb.write(id, "output.log", "start\n");
    let go = sb.tmp.path().join(format!("go-{id}"));
    let script = format!("while [ ! -e \"$GO\" ]; do sleep 0.01; done\n{writer_body}");
    let log = sb.job_dir(id).join("output.log");
    let dir = sb.job_dir(id);
    let writer = shell(
        &script,
        &[
            ("LOG", log.as_path()),
            ("GO", go.as_path()),
            ("DIR", dir.as_path()),
            ("GO2", sb.tmp.path().join(format!("go2-{id}")).as_path()),
        ],
    );
    sb.write_pid(id, writer.id());
    (writer, go)
}

fn touch(path: &Path) {
    std::fs::write(path, "").unwrap();
}

fn expected(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|s| s.to_string()).collect()
}

#[test]
fn follow_prints_every_line_in_order_and_stops_after_the_exit_line() {
    let sb = Sandbox::new();
    let (mut writer, go) = follow_job(
        &sb,
        "w1",
        r#"i=1
while [ $i -le 20 ]; do printf 'line %02d\n' $i >> "$LOG"; sleep 0.05; i=$((i+1)); done
echo >> "$LOG"
echo exit:0 >> "$LOG"
"#,
    );
    let mut follow = Follow::spawn(&sb, "w1", &["-n", "1000"]);
    follow.wait_for_line("start");
    touch(&go);
    let (status, lines, stderr) = follow.finish();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    let mut want = vec!["start".to_string()];
    want.extend((1..=20).map(|i| format!("line {i:02}")));
    want.extend(["".to_string(), "exit:0".to_string()]);
    // Every line, in order, and nothing after the exit line.
    assert_eq!(lines, want, "stderr: {stderr}");
    assert_eq!(writer.wait_within(HANG_GUARD, "the writer").code(), Some(0));
}

/// Where the native watcher cannot be used (here: turned off, as on a remote file system) `-f`
/// looks again on its own timer and still prints every line.
#[test]
fn follow_keeps_following_when_polling() {
    let sb = Sandbox::new();
    let (mut writer, go) = follow_job(
        &sb,
        "pl",
        r#"for l in 'one' 'two' 'three'; do echo "$l" >> "$LOG"; sleep 0.05; done
echo >> "$LOG"
echo exit:0 >> "$LOG"
"#,
    );
    let mut follow = Follow::spawn_with_env(&sb, "pl", &[], &[("LUZIA_WATCH", "poll")]);
    follow.wait_for_line("start");
    touch(&go);
    let (status, lines, stderr) = follow.finish();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        lines,
        expected(&["start", "one", "two", "three", "", "exit:0"])
    );
    assert_eq!(writer.wait_within(HANG_GUARD, "the writer").code(), Some(0));
}

#[test]
fn follow_starts_over_after_truncation() {
    let sb = Sandbox::new();
    let long = "x".repeat(2000);
    let (_writer, go) = follow_job(
        &sb,
        "tr",
        &format!(
            r#"for l in 'old 1' 'old 2' 'old 3' '{long}'; do echo "$l" >> "$LOG"; sleep 0.05; done
while [ ! -e "$GO2" ]; do sleep 0.01; done
: > "$LOG"
for l in 'new 1' 'new 2' 'new 3'; do echo "$l" >> "$LOG"; sleep 0.05; done
echo >> "$LOG"
echo exit:0 >> "$LOG"
"#
        ),
    );
    let mut follow = Follow::spawn(&sb, "tr", &[]);
    follow.wait_for_line("start");
    touch(&go);
    // Truncate only once everything before has been shown (the old content is longer than
    // the new, so the truncation is always seen).
    follow.wait_for_line(&long);
    touch(&sb.tmp.path().join("go2-tr"));
    let (status, lines, stderr) = follow.finish();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        lines,
        expected(&[
            "start", "old 1", "old 2", "old 3", &long, "new 1", "new 2", "new 3", "", "exit:0"
        ])
    );
    assert!(stderr.contains("output.log was truncated"), "{stderr}");
}

#[test]
fn follow_reopens_a_replaced_log() {
    let sb = Sandbox::new();
    let (_writer, go) = follow_job(
        &sb,
        "rp",
        r#"for l in 'old 1' 'old 2'; do echo "$l" >> "$LOG"; sleep 0.05; done
while [ ! -e "$GO2" ]; do sleep 0.01; done
printf 'new 1\nnew 2\n' > "$LOG.new"
mv "$LOG.new" "$LOG"
sleep 0.05
echo 'new 3' >> "$LOG"
sleep 0.05
echo >> "$LOG"
echo exit:0 >> "$LOG"
"#,
    );
    let mut follow = Follow::spawn(&sb, "rp", &[]);
    follow.wait_for_line("start");
    touch(&go);
    follow.wait_for_line("old 2");
    touch(&sb.tmp.path().join("go2-rp"));
    let (status, lines, stderr) = follow.finish();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        lines,
        expected(&[
            "start", "old 1", "old 2", "new 1", "new 2", "new 3", "", "exit:0"
        ])
    );
    assert!(stderr.contains("output.log was replaced"), "{stderr}");
}

#[test]
fn follow_does_not_stop_at_a_mid_way_exit_line() {
    let sb = Sandbox::new();
    // Five bursts, each ending in an `exit:0` line immediately followed by more output (separate
    // writes, microseconds apart), then the real end.
    let (_writer, go) = follow_job(
        &sb,
        "mid",
        r#"i=1
while [ $i -le 5 ]; do
  echo "tool $i" >> "$LOG"
  echo "exit:0" >> "$LOG"
  echo "after $i" >> "$LOG"
  sleep 0.03
  i=$((i+1))
done
echo done >> "$LOG"
echo >> "$LOG"
echo exit:0 >> "$LOG"
"#,
    );
    let mut follow = Follow::spawn(&sb, "mid", &[]);
    follow.wait_for_line("start");
    touch(&go);
    let (status, lines, stderr) = follow.finish();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    let mut want = vec!["start".to_string()];
    for i in 1..=5 {
        want.extend([format!("tool {i}"), "exit:0".into(), format!("after {i}")]);
    }
    want.extend(["done".into(), "".into(), "exit:0".into()]);
    assert_eq!(lines, want, "stderr: {stderr}");
}

#[test]
fn follow_stops_when_the_agent_dies_without_an_exit_line() {
    let sb = Sandbox::new();
    let mut agent = sleeper();
    sb.write("dying", "meta.json", OLD_META);
    sb.write("dying", "output.log", "working...\nstill working...\n");
    sb.write_pid("dying", agent.id());
    let mut follow = Follow::spawn(&sb, "dying", &[]);
    follow.wait_for_line("still working...");
    agent.kill_and_reap();
    let (_status, lines, stderr) = follow.finish();
    assert_eq!(lines, expected(&["working...", "still working..."]));
    assert!(
        stderr.contains("job dying died without an exit line"),
        "{stderr}"
    );
}

#[test]
fn follow_of_a_finished_job_ends_at_once() {
    let sb = Sandbox::with_samples();
    // The exit line is there: nothing to wait for, whatever -n asks for.
    for n in ["50", "1", "0"] {
        let out = sb
            .luzia()
            .args(["logs", "142315-a1b2", "-f", "-n", n])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "-n {n}: {}", stderr_of(&out));
        let want = match n {
            "50" => "Collecting tests...\n128 passed in 41.2s\nAll good.\n\nexit:0\n",
            "1" => "exit:0\n",
            _ => "",
        };
        assert_eq!(stdout_of(&out), want, "-n {n}");
    }
    // An exit line written without its newline is still the last line, and is shown.
    let sb = Sandbox::new();
    sb.write("nonl", "meta.json", OLD_META);
    sb.write("nonl", "output.log", "done\n\nexit:4");
    let out = sb.luzia().args(["logs", "nonl", "-f"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "done\n\nexit:4\n");
}

#[test]
fn follow_shows_an_exit_line_that_comes_without_a_newline() {
    let sb = Sandbox::new();
    let (_writer, go) = follow_job(
        &sb,
        "nl",
        r#"echo 'working' >> "$LOG"
sleep 0.05
printf '\nexit:7' >> "$LOG"
"#,
    );
    let mut follow = Follow::spawn(&sb, "nl", &[]);
    follow.wait_for_line("start");
    touch(&go);
    let (status, lines, stderr) = follow.finish();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(lines, expected(&["start", "working", "", "exit:7"]));
}

#[test]
fn follow_waits_for_a_log_that_does_not_exist_yet() {
    let sb = Sandbox::new();
    let (_writer, go) = follow_job(
        &sb,
        "late",
        r#"for l in one two; do echo "$l" >> "$LOG"; sleep 0.05; done
echo >> "$LOG"
echo exit:0 >> "$LOG"
"#,
    );
    std::fs::remove_file(sb.job_dir("late").join("output.log")).unwrap();
    let mut follow = Follow::spawn(&sb, "late", &[]);
    follow.wait_for_stderr("does not exist yet; waiting for it");
    touch(&go);
    let (status, lines, stderr) = follow.finish();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(lines, expected(&["one", "two", "", "exit:0"]));
}
