//! Finding rows that moved up between two frames, so that the terminal scrolls them instead of
//! being sent them again.
//!
//! A followed log gains a line: every row of the output pane changes, and a cell diff sends the
//! whole pane. Terminals scroll a band of whole rows (a scroll region, DECSTBM) for a few
//! bytes; after that only the new rows differ. Rows are compared whole, so a band is found only
//! where entire rows moved: an output pane beside another pane never qualifies (its rows hold
//! the other pane too), and the frame is sent as a plain cell diff.
//!
//! Which band and by how much is decided on row hashes; what is sent after the scroll is the
//! diff of the scrolled last frame against the new one, so a wrong guess costs bytes, never
//! what is on screen.

use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::fast::{FixedState, FoldHasher};

use ratatui::buffer::{Buffer, Cell};

/// A band of rows `top..=bottom` (0-based, within the buffer) moved up by `by` rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scroll {
    pub top: u16,
    pub bottom: u16,
    pub by: u16,
}

/// Rows a scroll must save to be worth its escape sequences (a row is at least its width in
/// bytes; the scroll is about twenty).
const MIN_ROWS_SAVED: i32 = 2;

/// One hash per row: what the row shows.
pub fn row_hashes(buf: &Buffer) -> Vec<u64> {
    let width = usize::from(buf.area.width);
    if width == 0 {
        return vec![0; usize::from(buf.area.height)];
    }
    buf.content
        .chunks(width)
        .map(|row| {
            let mut h = hasher();
            for cell in row {
                hash_cell(cell, &mut h);
            }
            h.finish()
        })
        .collect()
}

/// A fast hasher, the same in every frame: a collision costs a wrong guess of the band, and so
/// bytes, never what is on screen (see the module's doc).
fn hasher() -> FoldHasher<'static> {
    FixedState::default().build_hasher()
}

fn hash_cell(cell: &Cell, h: &mut impl Hasher) {
    cell.symbol().hash(h);
    cell.fg.hash(h);
    cell.bg.hash(h);
    cell.modifier.hash(h);
    #[allow(deprecated)]
    cell.skip.hash(h);
}

/// The hash of a blank row of `width` cells: what a row scrolled in at the bottom of a band
/// shows.
pub fn blank_hash(width: u16) -> u64 {
    let mut h = hasher();
    let cell = Cell::EMPTY;
    for _ in 0..width {
        hash_cell(&cell, &mut h);
    }
    h.finish()
}

/// The band and distance whose scroll leaves the fewest rows to send from `before` (the rows of
/// the last frame) to `after` (the new one), if it saves enough to be worth it.
pub fn find(before: &[u64], after: &[u64], blank: u64) -> Option<Scroll> {
    let h = after.len();
    if before.len() != h {
        return None;
    }
    let differs = |y: usize| i32::from(after[y] != before[y]);
    let changed: i32 = (0..h).map(differs).sum();
    if changed < MIN_ROWS_SAVED + 1 {
        return None;
    }
    // A row that ends up in the band's blank tail costs what it costs against a blank row;
    // prefix sums give the tail's saving for any band in one subtraction.
    let mut tail = vec![0i32; h + 1];
    for y in 0..h {
        tail[y + 1] = tail[y] + differs(y) - i32::from(after[y] != blank);
    }
    let mut best: Option<(i32, Scroll)> = None;
    for by in 1..h {
        // The best run of rows receiving a row from `by` below: maximum-sum subarray.
        let (mut run, mut start) = (0i32, 0usize);
        for y in 0..h - by {
            let gain = differs(y) - i32::from(after[y] != before[y + by]);
            if run <= 0 {
                run = gain;
                start = y;
            } else {
                run += gain;
            }
            if run <= 0 {
                continue;
            }
            let saved = run + tail[y + by + 1] - tail[y + 1];
            if saved >= MIN_ROWS_SAVED && best.is_none_or(|(s, _)| saved > s) {
                let scroll = Scroll {
                    top: start as u16,
                    bottom: (y + by) as u16,
                    by: by as u16,
                };
                best = Some((saved, scroll));
            }
        }
    }
    best.map(|(_, s)| s)
}

/// Moves the band's rows of `buf` up as the terminal does: the top `by` rows of the band are
/// lost, the bottom `by` are blank.
pub fn apply<T: Clone>(rows: &mut [T], width: usize, s: Scroll, blank: &T) {
    let (top, bottom, by) = (usize::from(s.top), usize::from(s.bottom), usize::from(s.by));
    let band = &mut rows[top * width..(bottom + 1) * width];
    band.rotate_left(by * width);
    let len = band.len();
    for cell in &mut band[len - by * width..] {
        *cell = blank.clone();
    }
}

/// The bytes that make the terminal scroll the band (rows relative to the buffer, which starts
/// at row `y0` of the screen): set the scroll region, go to its last row, one line feed per row,
/// and put the region back to the whole screen. Colours are reset first, since a terminal
/// fills the new rows with the current background.
pub fn sequence(s: Scroll, y0: u16) -> Vec<u8> {
    let top = u32::from(y0) + u32::from(s.top) + 1;
    let bottom = u32::from(y0) + u32::from(s.bottom) + 1;
    let mut out = format!("\x1b[0m\x1b[{top};{bottom}r\x1b[{bottom};1H").into_bytes();
    out.extend(std::iter::repeat_n(b'\n', usize::from(s.by)));
    out.extend_from_slice(b"\x1b[r");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find_in(before: &[u64], after: &[u64]) -> Option<Scroll> {
        find(before, after, 0)
    }

    #[test]
    fn a_pane_of_lines_moved_up_is_found() {
        // Header, six log rows, footer; two new lines.
        let before = [100, 1, 2, 3, 4, 5, 6, 200];
        let after = [100, 3, 4, 5, 6, 7, 8, 200];
        assert_eq!(
            find_in(&before, &after),
            Some(Scroll {
                top: 1,
                bottom: 6,
                by: 2
            })
        );
    }

    #[test]
    fn rows_that_did_not_move_are_not_scrolled() {
        let before = [100, 1, 2, 3, 4, 5, 6, 200];
        let after = [100, 11, 12, 13, 14, 15, 16, 200];
        assert_eq!(find_in(&before, &after), None, "all new: nothing to reuse");
        assert_eq!(find_in(&before, &before), None, "nothing changed");
        let one = [100, 2, 3, 4, 5, 6, 7, 200];
        let shifted_one = find_in(&before, &one).expect("one new line");
        assert_eq!(
            (shifted_one.top, shifted_one.bottom, shifted_one.by),
            (1, 6, 1)
        );
    }

    #[test]
    fn a_scroll_saving_too_little_is_not_worth_it() {
        let before = [1, 2, 3, 9, 9, 9];
        let after = [2, 3, 4, 9, 9, 9];
        // Rows 0..=1 saved, row 2 sent either way: saving two rows is the minimum.
        assert!(find_in(&before, &after).is_some());
        let after = [2, 8, 4, 9, 9, 9];
        assert_eq!(find_in(&before, &after), None);
    }

    #[test]
    fn apply_moves_the_band_and_blanks_its_tail() {
        let mut rows: Vec<u8> = vec![0, 0, 1, 1, 2, 2, 3, 3, 4, 4];
        apply(
            &mut rows,
            2,
            Scroll {
                top: 1,
                bottom: 3,
                by: 1,
            },
            &9,
        );
        assert_eq!(rows, [0, 0, 2, 2, 3, 3, 9, 9, 4, 4]);
    }

    #[test]
    fn the_sequence_names_screen_rows() {
        let s = Scroll {
            top: 2,
            bottom: 10,
            by: 3,
        };
        assert_eq!(
            String::from_utf8(sequence(s, 0)).unwrap(),
            "\x1b[0m\x1b[3;11r\x1b[11;1H\n\n\n\x1b[r"
        );
    }
}
