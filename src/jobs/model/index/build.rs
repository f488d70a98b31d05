//! Writing a root's index anew: the entries of the old one that still match the disk are kept
//! as they are, every other settled job is read once more with its stamps noted, and the file is
//! replaced whole (written beside it, then renamed over it), so a reader sees the old index or
//! the new one, never a part. Both are streamed in the order of the ids: a block of each in
//! memory at a time.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::jobs::fs::files::{self, open_root, open_write};
use crate::jobs::model::job::record_job;
use crate::jobs::model::scan::list_ids;

use super::format::{Index, Writer};

/// What a refresh did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// Entries of the old index kept, their stamps still matching.
    pub kept: usize,
    /// Settled jobs read from their files and taken in.
    pub taken: usize,
    /// Jobs left out: not settled, changed too lately, or read with a problem.
    pub left: usize,
}

/// Writes the index of the jobs root `root` at `path`, as of `now`. Reads the root as a scan
/// does (every job not already in the old index, once more), so it belongs off any thread a
/// person waits on.
pub fn refresh(root: &Path, path: &Path, now: DateTime<Utc>) -> std::io::Result<Refreshed> {
    let mut ids = list_ids(root).map_err(std::io::Error::other)?;
    ids.sort();
    let old = Index::load(path, root);
    let mut old = old.as_ref().map(Index::cursor);
    let root_fd = open_root(root)?;
    let root_fd = std::os::fd::AsFd::as_fd(&root_fd);
    let dir = path.parent().unwrap_or(Path::new("."));
    // The entries hold every job's meta.json (tasks, paths): the user's alone, whatever the
    // umask, as the jobs root's own permissions may be.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    remove_abandoned(dir, &name);
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut done = Refreshed::default();
    let written = (|| {
        let file = open_write(&tmp, files::Write::Truncate, 0o600)?;
        let file = std::io::BufWriter::new(file);
        let mut out = Writer::start(root, file)?;
        let shared: std::sync::Arc<Path> = std::sync::Arc::from(root);
        for id in &ids {
            if let Some((tape, raw)) = old.as_mut().and_then(|c| c.find(id.as_str()))
                && tape.still_matches(root_fd, id.as_str())
            {
                out.raw(id.as_str(), raw)?;
                done.kept += 1;
                continue;
            }
            let taken = record_job(&shared, root_fd, id, now).and_then(|(job, tape)| {
                let indexable = job.is_settled()
                    && job.problems.is_empty()
                    && tape.complete
                    && tape.settled_by(now);
                indexable.then_some(tape)
            });
            match taken {
                Some(tape) if out.entry(id.as_str(), &tape)? => done.taken += 1,
                _ => done.left += 1,
            }
        }
        out.finish()?.flush()
    })();
    // A cache needs no `fsync`: a file torn by a crash fails its checksums and is rebuilt.
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed.map(|()| done)
}

/// Removes what a refresh of the index `name` left beside it when its cockpit ended mid-write
/// (`.NAME.PID.tmp` of a process that is gone): at 100,000 jobs, 40 MB each.
fn remove_abandoned(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file = entry.file_name();
        let pid = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|pid| pid.parse::<i32>().ok())
            .and_then(rustix::process::Pid::from_raw);
        let gone = pid.is_some_and(|pid| {
            rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
        });
        if gone {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
