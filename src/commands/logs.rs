//! `luzia logs ID [-n N] [-f]`: the end of a job's output, sanitized; with `-f`, new lines as
//! they are appended (woken by file-system events, not by sleeping), until the exit line.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::cli::LogsArgs;
use crate::config::Config;
use crate::jobs::fs::follow::{Follower, Reset};
use crate::jobs::fs::notify::Backend;
use crate::jobs::fs::tail::{RawLine, exit_code, last_lines, parse_exit_line};
use crate::jobs::fs::wait::DirWatch;
use crate::jobs::text::sanitize::sanitize_line;
use crate::jobs::{Status, fs::files::open_nofollow, read_job};

/// How long an exit line must stay the last line before `-f` believes it: an agent that
/// prints `exit:0` mid-burst has not finished.
const EXIT_SETTLE: Duration = Duration::from_millis(100);
/// How often `-f` checks, between events, whether the job died without an exit line.
const LIVENESS_EVERY: Duration = Duration::from_secs(1);

pub fn run(cfg: &Config, args: &LogsArgs, out: &mut dyn Write) -> Result<()> {
    let job = super::find_job(cfg, &args.id)?;
    let path = job.log_path();
    let colors = super::stdout_colors();
    let mut printer = Printer {
        out,
        colors,
        last_nonempty: None,
    };

    let follower =
        match open_nofollow(&path).with_context(|| format!("cannot open {}", path.display()))? {
            Some(file) => {
                let len = file.metadata()?.len();
                // Already ended (by the same rule as the status): `-f` has nothing to wait for,
                // even when the lines asked for do not reach the exit line (`-n 0`, blank lines
                // after it) or the exit line has no newline.
                let finished = exit_code(&file, len)?.is_some();
                let mut lines = last_lines(&file, len, args.lines.max(1))?;
                // A last line still missing its newline is not printed yet: the follower finishes it.
                let mut partial = Vec::new();
                if args.follow && !finished && len > 0 && !ends_with_newline(&file, len)? {
                    partial = lines.pop().map(|l| l.bytes).unwrap_or_default();
                }
                let skip = lines.len().saturating_sub(args.lines);
                printer.print(&lines[skip..])?;
                if finished {
                    return Ok(());
                }
                Follower::resume(&path, file, len, partial)?
            }
            None if args.follow => {
                crate::say!(
                    "luzia: {} does not exist yet; waiting for it",
                    path.display()
                );
                Follower::from_start(&path)
            }
            None => {
                crate::say!(
                    "luzia: job {} has no output yet ({} does not exist)",
                    job.id,
                    path.display()
                );
                return Ok(());
            }
        };
    if !args.follow {
        return Ok(());
    }
    if !job.status.is_active() && printer.ended_with_exit_line() {
        return Ok(());
    }
    let root = super::jobs_root(cfg)?;
    // The directory, not the file: a replaced or newly created log is seen too.
    let dir = job.dir();
    let watch = DirWatch::with_backend(&dir, Backend::from_env());
    follow(root, &dir, &watch, follower, &mut printer)
}

fn ends_with_newline(file: &std::fs::File, len: u64) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut last = [0u8];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

struct Printer<'a> {
    out: &'a mut dyn Write,
    colors: bool,
    last_nonempty: Option<Vec<u8>>,
}

impl Printer<'_> {
    fn print(&mut self, lines: &[RawLine]) -> Result<()> {
        for line in lines {
            let styled = sanitize_line(&line.bytes);
            let text = if self.colors {
                styled.to_ansi()
            } else {
                styled.plain()
            };
            writeln!(self.out, "{}{text}", if line.cut { "…" } else { "" })?;
            if !line.bytes.trim_ascii().is_empty() {
                self.last_nonempty = Some(line.bytes.clone());
            }
        }
        self.out.flush()?;
        Ok(())
    }

    fn ended_with_exit_line(&self) -> bool {
        self.last_nonempty
            .as_deref()
            .and_then(parse_exit_line)
            .is_some()
    }
}

/// Prints what is appended to the log until the exit line has stood for `EXIT_SETTLE`, or the
/// job is gone. Woken by `watch`; where it polls, the liveness check's timeout is the poll.
fn follow(
    root: &Path,
    job_dir: &Path,
    watch: &DirWatch,
    mut follower: Follower,
    printer: &mut Printer,
) -> Result<()> {
    let id = crate::jobs::JobId::parse(&job_dir.file_name().unwrap_or_default().to_string_lossy())?;
    let mut exit_seen_at: Option<Instant> = None;
    let mut last_liveness = Instant::now();
    loop {
        let chunk = follower
            .poll()
            .with_context(|| format!("cannot read {}", job_dir.join("output.log").display()))?;
        if let Some(reset) = chunk.reset {
            say_reset(reset);
        }
        let grew = !chunk.lines.is_empty() || !follower.partial().is_empty();
        printer.print(&chunk.lines)?;
        if chunk.more {
            continue;
        }
        // The supervisor's exit line may come without its newline: it is the last line anyway.
        let partial_exit = parse_exit_line(follower.partial()).is_some();
        if partial_exit
            || (printer.ended_with_exit_line() && follower.partial().trim_ascii().is_empty())
        {
            match exit_seen_at {
                Some(t) if t.elapsed() >= EXIT_SETTLE => {
                    if partial_exit {
                        printer.print(&[RawLine {
                            bytes: follower.partial().to_vec(),
                            cut: false,
                        }])?;
                    }
                    return Ok(());
                }
                None => exit_seen_at = Some(Instant::now()),
                _ => {}
            }
        } else if grew {
            exit_seen_at = None;
        }
        watch.wait(if exit_seen_at.is_some() {
            EXIT_SETTLE
        } else {
            LIVENESS_EVERY
        });
        if last_liveness.elapsed() >= LIVENESS_EVERY && exit_seen_at.is_none() {
            last_liveness = Instant::now();
            if let Some(why) = gone_without_exit(root, &id, job_dir)? {
                // Print what is left, then say why we stop.
                printer.print(&follower.poll()?.lines)?;
                crate::say!("luzia: job {id} {why}");
                return Ok(());
            }
        }
    }
}

/// What was shown no longer stands: say why the lines start again.
fn say_reset(reset: Reset) {
    let what = match reset {
        Reset::Truncated => "was truncated",
        Reset::Replaced => "was replaced",
        Reset::Skipped(_) => "was skipped ahead",
    };
    crate::say!("luzia: output.log {what}; following from its start");
}

/// Why following must stop although no exit line came, if it must.
fn gone_without_exit(
    root: &Path,
    id: &crate::jobs::JobId,
    dir: &Path,
) -> Result<Option<&'static str>> {
    match read_job(root, id, chrono::Utc::now()) {
        None => bail!("the job directory {} was removed", dir.display()),
        Some(j) if j.status == Status::Died => {
            Ok(Some("died without an exit line (its process is gone)"))
        }
        Some(j) if j.status == Status::Unknown && past_grace(dir) => Ok(Some(
            "has no meta.json, output.log or pid: there is nothing to follow",
        )),
        Some(_) => Ok(None),
    }
}

/// A directory with nothing in it may be a job still being created: give it the start-up grace.
fn past_grace(dir: &Path) -> bool {
    let grace = Duration::from_secs(crate::jobs::model::status::STARTUP_GRACE_SECS as u64);
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > grace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::fs::notify::{Handler, WatchMode};
    use std::sync::{Arc, Mutex};

    /// What inotify_init1 gives when the user's inotify instances are used up.
    fn no_instances_left(_: Handler) -> notify::Result<Box<dyn notify::Watcher + Send>> {
        Err(notify::Error::io(rustix::io::Errno::MFILE.into()))
    }

    /// Output the test reads while `follow` is still writing it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    #[test]
    fn follow_keeps_following_when_the_native_watcher_cannot_start() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("j1");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "t"}"#).unwrap();
        std::fs::write(dir.join("pid"), std::process::id().to_string()).unwrap();
        let log = dir.join("output.log");
        std::fs::write(&log, "start\n").unwrap();
        let watch = DirWatch::with_backend(&dir, Backend::Native(no_instances_left));
        assert!(
            matches!(watch.mode(), WatchMode::Polling { reason } if reason.contains("file watching failed")),
            "{:?}",
            watch.mode()
        );
        let out = Shared::default();
        // Appends only once `start` is out, so every line after it comes through a poll.
        let writer = {
            let (out, log) = (out.clone(), log.clone());
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(10);
                while !out.text().contains("start") {
                    assert!(Instant::now() < deadline, "follow printed nothing");
                    std::thread::sleep(Duration::from_millis(10));
                }
                let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
                f.write_all(b"line 1\nline 2\n\nexit:0\n").unwrap();
            })
        };
        let mut sink = out.clone();
        let mut printer = Printer {
            out: &mut sink,
            colors: false,
            last_nonempty: None,
        };
        follow(
            root.path(),
            &dir,
            &watch,
            Follower::from_start(&log),
            &mut printer,
        )
        .unwrap();
        writer.join().unwrap();
        assert_eq!(out.text(), "start\nline 1\nline 2\n\nexit:0\n");
    }
}
