use super::*;
use std::fs::OpenOptions;
use std::io::Write;

fn append(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn texts(chunk: &Chunk) -> Vec<String> {
    chunk
        .lines
        .iter()
        .map(|l| String::from_utf8_lossy(&l.bytes).into_owned())
        .collect()
}

#[test]
fn appends_partials_truncation_and_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    let mut f = Follower::from_start(&path);
    assert!(
        f.poll().unwrap().lines.is_empty(),
        "absent file reads as nothing"
    );

    append(&path, b"one\ntw");
    let c = f.poll().unwrap();
    assert_eq!(texts(&c), ["one"]);
    assert_eq!(c.reset, None);
    assert_eq!(f.partial(), b"tw");

    append(&path, b"o\nthree\n");
    assert_eq!(texts(&f.poll().unwrap()), ["two", "three"]);
    assert!(f.poll().unwrap().lines.is_empty());

    std::fs::write(&path, b"x\n").unwrap(); // truncated in place, shorter
    let c = f.poll().unwrap();
    assert_eq!(c.reset, Some(Reset::Truncated));
    assert_eq!(texts(&c), ["x"]);

    let other = dir.path().join("new.log");
    std::fs::write(&other, b"fresh 1\nfresh 2\n").unwrap();
    std::fs::rename(&other, &path).unwrap(); // replaced: new inode
    let c = f.poll().unwrap();
    assert_eq!(c.reset, Some(Reset::Replaced));
    assert_eq!(texts(&c), ["fresh 1", "fresh 2"]);
}

#[test]
fn an_endless_line_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    let mut f = Follower::from_start(&path);
    for _ in 0..64 {
        append(&path, &[b'z'; 64 * 1024]);
        f.poll().unwrap();
        assert!(f.partial().len() <= 4 * LINE_CAP);
    }
    append(&path, b"END\n");
    let c = f.poll().unwrap();
    assert_eq!(c.lines.len(), 1);
    assert!(c.lines[0].cut);
    assert!(c.lines[0].bytes.ends_with(b"zEND"));
    assert!(c.lines[0].bytes.len() <= LINE_CAP);
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    use crate::jobs::fs::files::tests::{mkfifo, returns};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    mkfifo(&path);
    let err = returns("polling a FIFO", move || Follower::from_start(&path).poll())
        .unwrap_err()
        .to_string();
    assert!(err.contains("is a FIFO, not a regular file"), "{err}");

    // A log replaced by a FIFO while followed: refused the same way.
    let path = dir.path().join("other.log");
    append(&path, b"one\n");
    let mut f = Follower::from_start(&path);
    assert_eq!(texts(&f.poll().unwrap()), ["one"]);
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let err = returns("polling a log replaced by a FIFO", move || f.poll())
        .unwrap_err()
        .to_string();
    assert!(err.contains("is a FIFO"), "{err}");
}

#[test]
fn a_window_skips_the_cut_line_and_applies_again_after_a_reset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    append(&path, b"first line\nsecond line\nthird\n");
    let mut f = Follower::windowed(&path, 10);
    let c = f.poll().unwrap();
    // 10 bytes before the end is inside "second line": that line is cut, so dropped.
    assert_eq!(texts(&c), ["third"]);
    assert_eq!((c.start, c.read), (19, 10));

    std::fs::write(&path, b"0123456789abc\nend\n").unwrap(); // shorter: truncated
    let c = f.poll().unwrap();
    assert_eq!(c.reset, Some(Reset::Truncated));
    assert_eq!((c.start, texts(&c)), (8, vec!["end".to_string()]));
}

#[test]
fn released_it_carries_on_and_a_limit_stops_it_early() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    append(&path, b"one\ntwo\nthr");
    let mut f = Follower::from_start(&path);
    let mut seen = Vec::new();
    let c = f
        .poll_lines(5, |l, _| seen.push(String::from_utf8_lossy(l).into_owned()))
        .unwrap();
    assert_eq!(
        (seen.as_slice(), c.read, c.more),
        (&["one".to_string()][..], 5, false)
    );
    f.release();
    append(&path, b"ee\n");
    let c = f.poll().unwrap();
    assert_eq!(c.reset, None, "the same file, opened again");
    assert_eq!(texts(&c), ["two", "three"]);
    assert_eq!(c.start, 5);
}

#[test]
fn a_position_taken_from_another_follower_continues_from_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    append(&path, b"one\ntw");
    let mut pane = Follower::from_start(&path);
    let c = pane.poll().unwrap();
    let handed = pane.handoff(&c);
    assert_eq!((handed.start, handed.end.offset), (0, 6));
    let mut other = Follower::windowed(&path, 1024);
    other.set_position(handed.end);
    append(&path, b"o\n");
    let c = other.poll().unwrap();
    assert_eq!(c.reset, None);
    assert_eq!(texts(&c), ["two"]);
    assert_eq!(c.read, 2, "only the bytes the other had not read");
}

#[test]
fn text_and_lines_read_the_same_whatever_the_pieces() {
    let dir = tempfile::tempdir().unwrap();
    let content: Vec<u8> = (0..400)
        .map(|i| format!("line {i} {}\n", "x".repeat(i % 37)))
        .collect::<String>()
        .into_bytes();
    for (window, step) in [(u64::MAX, 1), (u64::MAX, 7), (100, 13), (1000, 4096)] {
        let path = dir.path().join(format!("log-{window}-{step}"));
        let mut lines = Follower::windowed(&path, window);
        let mut text = Follower::windowed(&path, window).read_at_most(5);
        let mut whole = Follower::windowed(&path, window).read_at_most(3);
        let (mut by_line, mut by_text, mut by_whole) = (Vec::new(), Vec::new(), Vec::new());
        let mut buf = Vec::new();
        // The window applies to what is there at the first poll.
        append(&path, &content[..200]);
        let mut written = 200;
        while written < content.len() {
            let next = (written + step).min(content.len());
            append(&path, &content[written..next]);
            written = next;
            lines
                .poll_lines(u64::MAX, |l, _| {
                    by_line.extend_from_slice(l);
                    by_line.push(b'\n');
                })
                .unwrap();
            // Five bytes a poll: poll until nothing more waits.
            while text
                .poll_text(u64::MAX, |t| by_text.extend_from_slice(t))
                .unwrap()
                .more
            {}
            loop {
                let (chunk, read) = whole.poll_whole(u64::MAX, buf).unwrap();
                by_whole.extend_from_slice(&read.head);
                by_whole.extend_from_slice(read.body());
                assert_eq!(read.len(), read.head.len() + read.body().len());
                buf = read.into_buf();
                if !chunk.more {
                    break;
                }
            }
        }
        assert_eq!(by_line, by_text, "window {window}, step {step}");
        assert_eq!(by_whole, by_text, "window {window}, step {step}");
        assert!(content.ends_with(&by_text), "window {window}, step {step}");
    }
}

#[test]
fn whole_lines_say_when_the_first_was_cut_and_reuse_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    append(&path, b"one\ntwo\n");
    let mut f = Follower::from_start(&path);
    f.poll().unwrap();
    // More than a reader keeps behind: it jumps to the end, inside a line.
    append(&path, b"a long line that the jump lands in\nlast\n");
    assert!(f.skip_to_end(10, 14).unwrap() > 0);
    let (chunk, read) = f.poll_whole(u64::MAX, Vec::with_capacity(4096)).unwrap();
    assert_eq!(chunk.read, 14);
    assert!(read.first_cut);
    assert_eq!(read.head, b"lands in\n");
    assert_eq!(read.body(), b"last\n");
    assert!(
        read.into_buf().capacity() >= 4096,
        "the buffer given is read into"
    );
}
