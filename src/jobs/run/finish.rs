//! A job's last words: the exit line at the end of output.log and `finished`/`exit_code` in
//! meta.json. A full disk must not take them away, so room for them is reserved when the job is
//! made: `.reserve`, a file as large as meta.json will become plus a few blocks for the log.
//! When the exit line does not fit, the log's share of the reserve is given back and the line
//! written again; the new meta.json is written into the reserve's own blocks and renamed into
//! place, so it needs no free space at all.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use chrono::Utc;
use serde_json::Value;

use crate::jobs::fs::files::{self, open_write};
use crate::jobs::fs::names::{META_FILE, RESERVE_FILE};
use crate::jobs::fs::publish::{sync_dir, write_atomic};
use crate::jobs::model::status::Status;
use crate::jobs::model::stop::StopRequest;

/// The log's share: the exit line (and a note before it) need at most a block or two, whatever
/// the file system's block size.
pub const LOG_ROOM: u64 = 64 * 1024;
/// How much meta.json may grow when `finished`, `exit_code`, `status` and `stop` are added.
pub const META_GROWTH: u64 = 16 * 1024;

/// Reserves room in `dir` for the last words of a job whose meta.json is `meta_len` bytes.
/// Blocks are allocated, not just promised: `fallocate`, else zeros written.
pub fn reserve(dir: &Path, meta_len: u64) -> io::Result<()> {
    let size = meta_len + META_GROWTH + LOG_ROOM;
    let path = dir.join(RESERVE_FILE);
    let result = (|| {
        let file = open_write(&path, files::Write::Truncate, 0o600)?;
        match rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, size) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => {
                let zeros = vec![0u8; 64 * 1024];
                let mut left = size;
                while left > 0 {
                    let n = left.min(zeros.len() as u64) as usize;
                    (&file).write_all(&zeros[..n])?;
                    left -= n as u64;
                }
            }
            Err(e) => return Err(e.into()),
        }
        // Not fsynced: the blocks are the file's from here on, and only the supervisor of this
        // boot ever spends them. A crash ends that supervisor too: nothing is left to write
        // last words with them, so a reserve lost with the crash loses nothing (and a
        // supervisor that finds none makes one, see [`ensure_reserve`]).
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&path);
    }
    result
}

/// Reserves room in `dir` unless a reserve is there already (a job made before reserves were).
pub fn ensure_reserve(dir: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(dir.join(RESERVE_FILE)).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    // Anything else by that name (a FIFO, a link) is replaced: the reserve is luzia's own.
    let _ = std::fs::remove_file(dir.join(RESERVE_FILE));
    let meta_len = std::fs::symlink_metadata(dir.join(META_FILE)).map_or(0, |m| m.len());
    reserve(dir, meta_len)
}

/// Gives the log's share of the reserve back to the file system.
fn release_log_room(dir: &Path) -> bool {
    let Ok(file) = open_reserve(dir) else {
        return false;
    };
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return false;
    };
    len > 0 && file.set_len(len.saturating_sub(LOG_ROOM)).is_ok()
}

/// The reserve, as the supervisor left it, or an error: by the time it is spent the agent,
/// which owns the directory, may have put a FIFO or a link in its place, and the last words
/// must then go without it rather than wait or write elsewhere (see `files`).
fn open_reserve(dir: &Path) -> io::Result<File> {
    open_write(&dir.join(RESERVE_FILE), files::Write::InPlace, 0)
}

fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(c) if c == rustix::io::Errno::NOSPC.raw_os_error()
        || c == rustix::io::Errno::DQUOT.raw_os_error())
}

/// Appends `line` to the log; when the disk is full, with the log's share of the reserve.
pub fn append(dir: &Path, log: &File, line: &str) -> io::Result<()> {
    match (&*log).write_all(line.as_bytes()) {
        Err(e) if is_full(&e) && release_log_room(dir) => {
            // Whatever part went in before the disk filled stays; the line is written again
            // whole, and the last line is still this one.
            (&*log).write_all(line.as_bytes())
        }
        other => other,
    }
}

/// The exit line: an empty line, then `exit:N`, as the orchestrator writes it.
pub fn exit_line(dir: &Path, log: &File, code: i32) -> io::Result<()> {
    append(dir, log, &format!("\nexit:{code}\n"))?;
    let _ = log.sync_data();
    Ok(())
}

/// `finished` and `exit_code` into meta.json, keeping every other field as it was; after a
/// requested stop also `stop` and `status: killed`, which the exit code cannot say.
pub fn record_finish(dir: &Path, code: i32, stop: Option<&StopRequest>) -> io::Result<()> {
    // Under the directory's lock, which every rewrite of meta.json takes (a reply linking
    // itself to a job that is just finishing), so no rewrite loses another's fields.
    crate::jobs::fs::publish::locked(dir, || rewrite_finish(dir, code, stop))
}

fn rewrite_finish(dir: &Path, code: i32, stop: Option<&StopRequest>) -> io::Result<()> {
    // Not followed if a link: the directory may be the agent's user's by now, and a link could
    // point at a file only root may read.
    let bytes = crate::jobs::fs::files::read_capped(
        &dir.join(META_FILE),
        crate::jobs::fs::files::META_FILE_CAP,
    )?
    .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
    let Ok(Value::Object(mut meta)) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(io::Error::other("meta.json is not a JSON object"));
    };
    meta.insert(
        "finished".into(),
        Value::String(Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    );
    meta.insert("exit_code".into(), Value::from(code));
    if let Some(s) = stop.and_then(|s| serde_json::to_value(s).ok()) {
        meta.insert("status".into(), Value::from(Status::Killed.as_str()));
        meta.insert("stop".into(), s);
    }
    let bytes = serde_json::to_vec_pretty(&Value::Object(meta)).map_err(io::Error::other)?;
    replace_meta(dir, &bytes)
}

/// Writes `bytes` into the reserve's blocks and renames it over meta.json: readers see the old
/// file or the new one, and a full disk is no obstacle. Without a reserve, an ordinary atomic
/// replacement.
fn replace_meta(dir: &Path, bytes: &[u8]) -> io::Result<()> {
    let in_reserve = (|| {
        let file = open_reserve(dir)?;
        file.write_all_at(bytes, 0)?;
        file.set_len(bytes.len() as u64)?;
        file.sync_all()?;
        std::fs::rename(dir.join(RESERVE_FILE), dir.join(META_FILE))?;
        sync_dir(dir);
        Ok::<(), io::Error>(())
    })();
    match in_reserve {
        Ok(()) => Ok(()),
        Err(_) => write_atomic(dir, META_FILE, bytes),
    }
}

/// Removes what is left of the reserve once the last words are written.
pub fn discard_reserve(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(RESERVE_FILE));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(META_FILE),
            r#"{"id": "j", "project": "p", "x-kept": [1]}"#,
        )
        .unwrap();
        d
    }

    #[test]
    fn the_reserve_holds_meta_json_and_log_room_and_becomes_the_new_meta_json() {
        let d = job();
        let meta_len = std::fs::metadata(d.path().join(META_FILE)).unwrap().len();
        reserve(d.path(), meta_len).unwrap();
        let reserved = std::fs::metadata(d.path().join(RESERVE_FILE)).unwrap();
        assert_eq!(reserved.len(), meta_len + META_GROWTH + LOG_ROOM);
        use std::os::unix::fs::MetadataExt;
        assert!(
            reserved.blocks() * 512 >= reserved.len(),
            "allocated, not sparse"
        );
        ensure_reserve(d.path()).unwrap();
        record_finish(d.path(), 3, None).unwrap();
        assert!(!d.path().join(RESERVE_FILE).exists(), "used up");
        let meta: Value =
            serde_json::from_slice(&std::fs::read(d.path().join(META_FILE)).unwrap()).unwrap();
        assert_eq!(meta["exit_code"], 3);
        assert_eq!(meta["x-kept"], serde_json::json!([1]));
        assert!(meta["finished"].is_string());
    }

    #[test]
    fn without_a_reserve_meta_json_is_replaced_all_the_same() {
        let d = job();
        record_finish(d.path(), 0, None).unwrap();
        let meta: Value =
            serde_json::from_slice(&std::fs::read(d.path().join(META_FILE)).unwrap()).unwrap();
        assert_eq!(meta["exit_code"], 0);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.path().join("output.log"))
            .unwrap();
        exit_line(d.path(), &log, -9).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("output.log")).unwrap(),
            "\nexit:-9\n"
        );
        assert!(!release_log_room(d.path()), "nothing to give back");
    }
}
