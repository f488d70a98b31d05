//! Escape sequences out of the way of the patterns: `error[E0432]` coloured by cargo is
//! `\e[1m\e[38;5;9merror[E0432]\e[0m\e[1m: unresolved import`, which no regex written for the
//! text would match. This is not the display sanitizer (that one keeps colours and is far
//! slower); it only drops sequences, and never drops a newline, so lines stay lines.

/// Appends `input` without its escape sequences to `out`.
pub fn strip_escapes(input: &[u8], out: &mut Vec<u8>) {
    let mut rest = input;
    while let Some(esc) = memchr::memchr(0x1b, rest) {
        out.extend_from_slice(&rest[..esc]);
        rest = &rest[esc + 1..];
        rest = skip_sequence(rest);
    }
    out.extend_from_slice(rest);
}

/// What follows an ESC: the rest of the input after the sequence it starts. A newline always
/// ends a sequence (and is kept), so a broken sequence costs at most the rest of its line.
fn skip_sequence(s: &[u8]) -> &[u8] {
    match s.first() {
        // CSI: parameters and intermediates, then one final byte.
        Some(b'[') => {
            for (i, &b) in s.iter().enumerate().skip(1) {
                if b == b'\n' {
                    return &s[i..];
                }
                if (0x40..=0x7e).contains(&b) {
                    return &s[i + 1..];
                }
            }
            &[]
        }
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ESC \.
        Some(b']' | b'P' | b'X' | b'^' | b'_') => {
            for (i, &b) in s.iter().enumerate().skip(1) {
                match b {
                    b'\n' => return &s[i..],
                    0x07 => return &s[i + 1..],
                    0x1b if s.get(i + 1) == Some(&b'\\') => return &s[i + 2..],
                    _ => {}
                }
            }
            &[]
        }
        Some(b'\n') | None => s,
        // Two-byte sequences (ESC 7, ESC =, ...) and charset designations (ESC ( B); a
        // designation cut by the end of its line leaves the newline.
        Some(b'(' | b')' | b'*' | b'+') => match s.get(1) {
            Some(b'\n') => &s[1..],
            _ => s.get(2..).unwrap_or(&[]),
        },
        Some(_) => &s[1..],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        strip_escapes(s, &mut out);
        out
    }

    #[test]
    fn colours_titles_and_moves_go_newlines_stay() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"plain text\n", b"plain text\n"),
            (
                b"\x1b[1m\x1b[38;5;9merror[E0432]\x1b[0m\x1b[1m: unresolved import\x1b[0m\n",
                b"error[E0432]: unresolved import\n",
            ),
            (b"a\x1b]0;title\x07b\n", b"ab\n"),
            (b"a\x1b]52;c;SGVsbG8=\x1b\\b", b"ab"),
            (b"x\x1b[2J\x1b[Hy", b"xy"),
            (b"x\x1b(By\x1b7z", b"xyz"),
            // An unterminated sequence ends at the newline, which is kept.
            (b"a\x1b[12;\nnext\n", b"a\nnext\n"),
            (b"a\x1b]0;never ended\nnext", b"a\nnext"),
            (b"trailing\x1b", b"trailing"),
            (b"cut\x1b(\nnext", b"cut\nnext"),
        ];
        for (input, want) in cases {
            assert_eq!(
                String::from_utf8_lossy(&strip(input)),
                String::from_utf8_lossy(want),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
