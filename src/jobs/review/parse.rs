//! Reading what `git diff --raw --numstat -z` prints: each file's kind (added, modified,
//! deleted, renamed) from the raw records, its line counts from the numstat records (`-\t-` for
//! a binary file). With `-z` paths are printed as they are, NUL-terminated, so any byte a file
//! name may hold (a tab, a newline, a quote) comes through unquoted.

use crate::jobs::model::review::{ChangeKind, FileChange};

/// The files of `out` (the output of `git diff --raw --numstat -z [-M]`), in git's order.
/// Records that cannot be read are skipped rather than failing the whole change.
pub fn files(out: &[u8]) -> Vec<FileChange> {
    let fields: Vec<&[u8]> = out.split(|&b| b == 0).collect();
    let mut raw: Vec<FileChange> = Vec::new();
    let mut counts: Vec<(Option<(u64, u64)>, String)> = Vec::new();
    let mut i = 0;
    while i < fields.len() {
        let f = fields[i];
        i += 1;
        if f.is_empty() {
            continue;
        }
        if f[0] == b':' {
            let status = f.rsplit(|&b| b == b' ').next().unwrap_or_default();
            let kind = match status.first() {
                Some(b'A') => ChangeKind::Added,
                Some(b'D') => ChangeKind::Deleted,
                Some(b'R') | Some(b'C') => ChangeKind::Renamed,
                _ => ChangeKind::Modified,
            };
            let two = kind == ChangeKind::Renamed;
            let Some(path) = fields.get(i) else { break };
            i += 1;
            let mut change = FileChange {
                path: text(path),
                kind,
                ..FileChange::default()
            };
            if two {
                let Some(to) = fields.get(i) else { break };
                i += 1;
                change.from = Some(std::mem::replace(&mut change.path, text(to)));
            }
            raw.push(change);
            continue;
        }
        let mut parts = f.splitn(3, |&b| b == b'\t');
        let (Some(a), Some(r), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let n = match (number(a), number(r)) {
            (Some(a), Some(r)) => Some((a, r)),
            _ => None,
        };
        let path = if path.is_empty() {
            // A rename: the old path, then the new one, as fields of their own.
            i += 2;
            fields.get(i - 1).map(|p| text(p)).unwrap_or_default()
        } else {
            text(path)
        };
        counts.push((n, path));
    }
    for (k, (n, path)) in counts.into_iter().enumerate() {
        let same = raw.get(k).filter(|c| c.path == path).map(|_| k);
        let at = same.or_else(|| raw.iter().position(|c| c.path == path));
        let Some(at) = at else { continue };
        let c = &mut raw[at];
        match n {
            Some((a, r)) => (c.added, c.removed) = (a, r),
            None => c.binary = true,
        }
    }
    raw
}

/// Splits what `git diff --raw --numstat -p -z` prints into its records (raw, then numstat)
/// and its patch: the records end with an empty field, a NUL after the last record's own, which
/// no record holds (no field of one is empty).
pub fn split(out: &[u8]) -> (&[u8], &[u8]) {
    match out.windows(2).position(|w| w == b"\0\0") {
        Some(at) => (&out[..at + 1], &out[at + 2..]),
        None => (out, &[]),
    }
}

fn number(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const Z: &str = "0000000";

    fn raw(status: &str, paths: &[&str]) -> String {
        let mut s = format!(":100644 100644 {Z} {Z} {status}\0");
        for p in paths {
            s.push_str(p);
            s.push('\0');
        }
        s
    }

    #[test]
    fn reads_kinds_counts_renames_and_binaries() {
        let mut out = String::new();
        out += &raw("M", &["src/a.rs"]);
        out += &raw("A", &["new file.txt"]);
        out += &raw("D", &["gone"]);
        out += &raw("R087", &["old\tname", "new\nname"]);
        out += &raw("A", &["logo.png"]);
        out += "3\t1\tsrc/a.rs\0";
        out += "10\t0\tnew file.txt\0";
        out += "0\t4\tgone\0";
        out += "2\t2\t\0old\tname\0new\nname\0";
        out += "-\t-\tlogo.png\0";
        let f = files(out.as_bytes());
        assert_eq!(f.len(), 5);
        assert_eq!(
            (f[0].kind, f[0].added, f[0].removed),
            (ChangeKind::Modified, 3, 1)
        );
        assert_eq!(
            (f[1].path.as_str(), f[1].kind),
            ("new file.txt", ChangeKind::Added)
        );
        assert_eq!((f[2].kind, f[2].removed), (ChangeKind::Deleted, 4));
        assert_eq!(f[3].path, "new\nname");
        assert_eq!(f[3].from.as_deref(), Some("old\tname"));
        assert_eq!((f[3].kind, f[3].added), (ChangeKind::Renamed, 2));
        assert!(f[4].binary && f[4].added == 0);
        assert!(!f[0].binary);
    }

    #[test]
    fn records_and_patch_are_told_apart() {
        let out = format!("{}3\t1\ta\0\0diff --git a/a b/a\n", raw("M", &["a"]));
        let (records, patch) = split(out.as_bytes());
        assert_eq!(files(records).len(), 1);
        assert_eq!(patch, b"diff --git a/a b/a\n");
        assert_eq!(split(b""), (&b""[..], &b""[..]));
    }

    #[test]
    fn nothing_reads_as_nothing() {
        assert!(files(b"").is_empty());
        assert!(files(b"\0\0").is_empty());
        assert!(files(b":garbage").is_empty());
    }

    fn path() -> impl Strategy<Value = String> {
        // Any character but NUL, which no file name holds.
        "[^\u{0}]{1,12}"
    }

    proptest! {
        #[test]
        fn every_file_comes_back_as_written(
            entries in proptest::collection::vec(
                (path(), 0u8..5, 0u64..1_000_000, 0u64..1_000_000, path()), 0..20)
        ) {
            let mut seen = std::collections::HashSet::new();
            let entries: Vec<_> = entries
                .into_iter()
                .filter(|e| seen.insert(e.0.clone()) && seen.insert(e.4.clone()))
                .collect();
            let mut out = String::new();
            let mut expected = Vec::new();
            for (p, k, a, r, from) in &entries {
                let (status, kind) = match k {
                    0 => ("M", ChangeKind::Modified),
                    1 => ("A", ChangeKind::Added),
                    2 => ("D", ChangeKind::Deleted),
                    3 => ("R100", ChangeKind::Renamed),
                    _ => ("M", ChangeKind::Modified),
                };
                let binary = *k == 4;
                if kind == ChangeKind::Renamed {
                    out += &raw(status, &[from, p]);
                } else {
                    out += &raw(status, &[p]);
                }
                expected.push(FileChange {
                    path: p.clone(),
                    from: (kind == ChangeKind::Renamed).then(|| from.clone()),
                    kind,
                    added: if binary { 0 } else { *a },
                    removed: if binary { 0 } else { *r },
                    binary,
                });
            }
            for (p, k, a, r, from) in &entries {
                let n = if *k == 4 { "-\t-".to_owned() } else { format!("{a}\t{r}") };
                if *k == 3 {
                    out += &format!("{n}\t\0{from}\0{p}\0");
                } else {
                    out += &format!("{n}\t{p}\0");
                }
            }
            prop_assert_eq!(files(out.as_bytes()), expected);
        }

        #[test]
        fn any_bytes_are_read_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = files(&bytes);
        }
    }
}
