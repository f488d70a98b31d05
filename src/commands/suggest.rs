//! "Did you mean": the command a mistyped word was most likely meant to be, so that `luzia
//! stauts` is refused as a typo of `status` rather than taken for a project named `stauts`.

use clap::CommandFactory;

use crate::cli::Cli;

/// The visible command closest to `word`, when it is close enough to be a typo of it: a word
/// of letters (and '-', as command names are), at most one edit away from the command, two
/// for a word of five letters or more (a swap of neighbours is one edit).
pub fn closest_command(word: &str) -> Option<String> {
    let cli = Cli::command();
    let names = cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .flat_map(|s| std::iter::once(s.get_name()).chain(s.get_all_aliases()));
    closest(word, names).map(str::to_owned)
}

fn closest<'a>(word: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if !word.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
        return None;
    }
    let word = word.to_ascii_lowercase();
    let allowed = if word.len() >= 5 { 2 } else { 1 };
    names
        .map(|name| (edits(&word, name), name))
        .filter(|&(d, _)| d <= allowed && d < word.len())
        .min_by_key(|&(d, _)| d)
        .map(|(_, name)| name)
}

/// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of
/// two neighbouring letters, one edit each.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: the one before the previous, the previous, and the current.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut current = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d;
        }
        before = std::mem::replace(&mut previous, current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_count_a_swap_as_one() {
        let cases = [
            ("status", "status", 0),
            ("stauts", "status", 1),
            ("jbos", "jobs", 1),
            ("log", "logs", 1),
            ("kil", "kill", 1),
            ("", "man", 3),
            ("frobnicate", "gc", 9),
        ];
        for (a, b, want) in cases {
            assert_eq!(edits(a, b), want, "{a} -> {b}");
        }
    }

    #[test]
    fn a_typo_finds_its_command_and_a_word_far_from_all_finds_none() {
        assert_eq!(closest_command("stauts").as_deref(), Some("status"));
        assert_eq!(closest_command("jbos").as_deref(), Some("jobs"));
        assert_eq!(closest_command("Qustions").as_deref(), Some("questions"));
        assert_eq!(closest_command("aprove").as_deref(), Some("approve"));
        assert_eq!(closest_command("frobnicate"), None);
        assert_eq!(closest_command("musica"), None);
        // One letter is one edit from many commands: too short to guess.
        assert_eq!(closest_command("x"), None);
        // Not a word a command could be: a path.
        assert_eq!(closest_command("a/b"), None);
    }

    #[test]
    fn hidden_commands_are_never_suggested() {
        assert_eq!(closest_command("supervize"), None);
    }
}
