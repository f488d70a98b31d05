//! Display width: one measure for everything luzia lays out, the one the cockpit's drawing
//! (ratatui) uses: per grapheme cluster, with `unicode-width`. Measuring a whole string at once
//! gives other answers (`unicode-width` reads some letters across grapheme boundaries as one
//! ligature), and so does adding up characters (an emoji sequence is 2 columns, its characters 6).
//!
//! A terminal does not always agree: many advance the cursor by each character's own width and
//! know nothing of clusters, some join emoji sequences, each its own way. Where a terminal and
//! the drawing disagree, cells the drawing thinks it wrote hold something else, and stay so when
//! the row is drawn again: glyph debris. So text shown is first made *settled*: every grapheme's
//! width is the sum of its characters' widths, on which every terminal agrees (given the same
//! Unicode tables). [`shown`] drops or replaces the characters that make it otherwise (joiners,
//! variation selectors, skin-tone modifiers, tags, invisible characters) and [`settled`] says
//! whether a grapheme is; the sanitizer replaces any grapheme still unsettled.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Columns `s` takes on screen.
pub fn width(s: &str) -> usize {
    graphemes(s).map(|(_, w)| w).sum()
}

/// Each grapheme of `s`, with the columns it takes.
pub fn graphemes(s: &str) -> impl Iterator<Item = (&str, usize)> {
    s.graphemes(true).map(|g| (g, grapheme_width(g)))
}

/// Each grapheme of `s` with its byte offset and the columns it takes.
pub fn grapheme_indices(s: &str) -> impl Iterator<Item = (usize, &str, usize)> {
    s.grapheme_indices(true)
        .map(|(at, g)| (at, g, grapheme_width(g)))
}

/// Columns one grapheme takes, as ratatui measures it: a grapheme holding a control character
/// is not drawn; halfwidth katakana sound marks take a column each, as terminals draw them.
pub fn grapheme_width(g: &str) -> usize {
    if g.chars().any(char::is_control) {
        0
    } else if g.len() == 1 {
        1
    } else {
        g.width()
            + g.chars()
                .filter(|c| matches!(c, '\u{FF9E}' | '\u{FF9F}'))
                .count()
    }
}

/// Columns one character takes on its own (a terminal's `wcwidth`).
pub fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// The longest start of `s` that fits in `max` columns, cut between graphemes.
pub fn fit(s: &str, max: usize) -> &str {
    let mut used = 0;
    for (at, g) in s.grapheme_indices(true) {
        used += grapheme_width(g);
        if used > max {
            return &s[..at];
        }
    }
    s
}

/// Whether a terminal that advances by each character's width, and one that draws the grapheme
/// as one cluster, both put it in the columns the drawing measured (and it takes any).
pub fn settled(g: &str) -> bool {
    let w = grapheme_width(g);
    w > 0 && w == g.chars().map(char_width).sum::<usize>()
}

/// What text shown holds for `c`: `None` to drop it.
///
/// Dropped: what joins or restyles its neighbours into something terminals measure each their
/// own way (zero-width joiner and non-joiner, variation selectors, emoji skin-tone modifiers,
/// tag characters), and the invisible characters Unicode says to ignore (zero-width space,
/// word joiner, soft hyphen, byte order mark, fillers...). Replaced: halfwidth katakana sound
/// marks, by the combining marks they stand for (as NFKC does). Line and paragraph separators
/// become spaces.
pub fn shown(c: char) -> Option<char> {
    match c {
        '\u{FF9E}' => Some('\u{3099}'),
        '\u{FF9F}' => Some('\u{309A}'),
        '\u{2028}' | '\u{2029}' => Some(' '),
        c if ignorable(c) => None,
        c => Some(c),
    }
}

/// Unicode's Default_Ignorable_Code_Point (which holds the joiners, variation selectors and
/// tags), plus the emoji modifiers.
fn ignorable(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}'
        | '\u{1F3FB}'..='\u{1F3FF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown_text(s: &str) -> String {
        s.chars().filter_map(shown).collect()
    }

    #[test]
    fn measured_per_grapheme() {
        let cases: &[(&str, usize)] = &[
            ("", 0),
            ("abc", 3),
            ("日本", 4),
            ("e\u{301}", 1),
            ("👨\u{200D}👩\u{200D}👧", 2),
            ("🇫🇷", 2),
            // One string to unicode-width, two graphemes drawn in two cells.
            ("\u{644}\u{627}", 2),
            ("ｶ\u{FF9E}", 3),
            ("a\u{1b}b", 2),
        ];
        for (s, w) in cases {
            assert_eq!(width(s), *w, "{s:?}");
        }
    }

    #[test]
    fn fit_cuts_between_graphemes() {
        assert_eq!(fit("abcdef", 3), "abc");
        assert_eq!(fit("日本語", 3), "日");
        assert_eq!(fit("e\u{301}e\u{301}x", 2), "e\u{301}e\u{301}");
        assert_eq!(fit("ab", 9), "ab");
        assert_eq!(fit("日", 1), "");
    }

    #[test]
    fn what_terminals_disagree_on_is_dropped() {
        let cases: &[(&str, &str)] = &[
            // A family: three people, no longer joined.
            ("👨\u{200D}👩\u{200D}👧", "👨👩👧"),
            ("❤\u{FE0F}", "❤"),
            ("👍\u{1F3FD}", "👍"),
            ("🏴\u{E0067}\u{E0062}\u{E007F}", "🏴"),
            ("soft\u{AD}hyphen\u{200B}zero\u{FEFF}", "softhyphenzero"),
            ("ｶ\u{FF9E}", "ｶ\u{3099}"),
            ("line\u{2028}para", "line para"),
            ("e\u{301}", "e\u{301}"),
            ("1\u{FE0F}\u{20E3}", "1\u{20E3}"),
        ];
        for (raw, want) in cases {
            let got = shown_text(raw);
            assert_eq!(got, *want, "{raw:?}");
            assert!(graphemes(&got).all(|(g, _)| settled(g)), "{got:?}");
        }
        for unsettled in [
            "👨\u{200D}👩",
            "❤\u{FE0F}",
            "👍\u{1F3FD}",
            "ｶ\u{FF9E}",
            "\u{301}",
        ] {
            assert!(!settled(unsettled), "{unsettled:?}");
        }
    }
}
