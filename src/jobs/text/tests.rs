//! Properties of text shown: whatever an agent writes, a sanitized line fits the width cap, and
//! every grapheme of it takes the same columns whether measured as the drawing measures or
//! character by character as a terminal advances.

use proptest::prelude::*;

use super::sanitize::{MAX_CHARS, MAX_WIDTH, ellipsize, plain_text, sanitize_line};
use super::width::{char_width, grapheme_indices, settled, width};

/// Pieces of text terminals measure each their own way, mixed with plain text and escapes.
fn hostile_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{1,12}",
        Just("日本語".to_string()),
        Just("👨\u{200D}👩\u{200D}👧\u{200D}👦".to_string()),
        Just("\u{200D}".to_string()),
        Just("❤\u{FE0F}".to_string()),
        Just("\u{FE0E}".to_string()),
        Just("👍\u{1F3FD}".to_string()),
        Just("🇫🇷🇩".to_string()),
        Just("🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}".to_string()),
        Just("e\u{301}\u{302}".to_string()),
        Just("\u{301}".to_string()),
        Just("ｶ\u{FF9E}ﾟ".to_string()),
        Just("soft\u{AD}\u{200B}\u{2060}\u{FEFF}".to_string()),
        Just("\u{1100}\u{1161}\u{11A8}\u{1161}".to_string()),
        Just("1\u{FE0F}\u{20E3}".to_string()),
        Just("\u{644}\u{627}".to_string()),
        Just("\t".to_string()),
        Just("\r".to_string()),
        Just("\x1b[31m".to_string()),
        Just("\x1b[0m".to_string()),
        Just("\u{202E}".to_string()),
        any::<char>().prop_map(String::from),
    ]
}

/// A line of pieces; some pieces repeated so that lines pass the cap.
pub(crate) fn hostile_line() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            hostile_piece(),
            prop_oneof![9 => Just(1usize), 1 => 1usize..3000],
        ),
        0..30,
    )
    .prop_map(|pieces| pieces.into_iter().map(|(p, n)| p.repeat(n)).collect())
}

/// Every grapheme takes columns, and the same columns character by character.
fn all_settled(s: &str) -> Result<(), TestCaseError> {
    for (_, g, w) in grapheme_indices(s) {
        let chars: usize = g.chars().map(char_width).sum();
        prop_assert!(
            settled(g),
            "{g:?}: drawn {w} columns, a terminal advances {chars}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_sanitized_line_fits_the_cap_and_is_settled(line in hostile_line()) {
        let out = sanitize_line(line.as_bytes());
        let plain = out.plain();
        prop_assert!(width(&plain) <= MAX_WIDTH, "{} columns", width(&plain));
        prop_assert!(plain.chars().count() <= MAX_CHARS + 1);
        all_settled(&plain)?;
        // Segment by segment too: a grapheme is never split between two styles.
        for seg in &out.segments {
            all_settled(&seg.text)?;
            prop_assert_eq!(
                width(&seg.text),
                seg.text.chars().map(char_width).sum::<usize>()
            );
        }
        prop_assert_eq!(
            out.segments.iter().map(|s| width(&s.text)).sum::<usize>(),
            width(&plain)
        );
    }

    #[test]
    fn plain_text_and_its_excerpts_are_settled(line in hostile_line(), max in 0usize..200) {
        let plain = plain_text(&line);
        all_settled(&plain)?;
        let excerpt = ellipsize(&plain, max);
        prop_assert!(width(&excerpt) <= max + 1);
        all_settled(&excerpt)?;
        // Shown again, text shown is unchanged.
        let short = ellipsize(&plain, 500);
        prop_assert_eq!(plain_text(&short), short);
    }
}
