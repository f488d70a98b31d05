//! What installing luzia puts beside the binary: shell completions and the manual page, both
//! generated from the same command-line definition, so they never disagree with `--help`.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// `luzia completions SHELL`: the completion script for that shell.
/// For bash, the script also completes job ids, projects and hosts from what is on disk and in
/// the config (see [`super::complete`]).
pub fn completions(shell: clap_complete::Shell, out: &mut dyn Write) -> anyhow::Result<u8> {
    let mut cmd = visible_command();
    // Into memory first: the generator panics on a failed write (a full disk, a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "luzia", &mut script);
    out.write_all(&script)?;
    if shell == clap_complete::Shell::Bash {
        out.write_all(super::complete::bash_dynamic(&Cli::command()).as_bytes())?;
    }
    Ok(0)
}

/// The command line without its hidden commands (the supervisor, the demo's agent), which the
/// generators would otherwise offer to people.
fn visible_command() -> clap::Command {
    let full = Cli::command();
    let visible: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    clap::Command::new("luzia")
        .version(env!("CARGO_PKG_VERSION"))
        .about(full.get_about().cloned().unwrap_or_default())
        .args(full.get_arguments().cloned())
        .subcommands(visible)
}

/// `luzia man`: luzia(1) in roff, with one section per command.
pub fn man_page(out: &mut dyn Write) -> anyhow::Result<u8> {
    let cmd = visible_command();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    // Each visible command with its own options, which the stock page leaves out.
    writeln!(out, ".SH COMMANDS")?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        writeln!(out, ".SS {}", roff_escape(sub.get_name()))?;
        if let Some(about) = sub.get_about() {
            writeln!(out, "{}", roff_escape(&about.to_string()))?;
        }
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            let name = match (arg.get_long(), arg.get_short()) {
                (Some(long), Some(short)) => format!("\\-{short}, \\-\\-{}", roff_escape(long)),
                (Some(long), None) => format!("\\-\\-{}", roff_escape(long)),
                (None, Some(short)) => format!("\\-{short}"),
                (None, None) => arg.get_id().as_str().to_uppercase(),
            };
            writeln!(out, ".TP\n\\fB{name}\\fR")?;
            if let Some(help) = arg.get_help() {
                writeln!(out, "{}", roff_escape(&help.to_string()))?;
            }
        }
    }
    super::manual::write_sections(out)?;
    man.render_version_section(out)?;
    writeln!(
        out,
        ".SH SEE ALSO\n\\fBluzia \\fICOMMAND\\fB \\-\\-help\\fR for each command's options."
    )?;
    Ok(0)
}

/// A line of text as roff reads it: backslashes escaped, and a leading dot or quote kept from
/// being taken for a request.
pub(crate) fn roff_escape(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_gets_a_script_naming_the_commands() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let mut out = Vec::new();
            completions(shell, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            for command in ["jobs", "tui", "answer", "completions"] {
                assert!(text.contains(command), "{shell:?} lacks {command}");
            }
            assert!(
                !text.contains("supervise"),
                "{shell:?} offers a hidden command"
            );
        }
    }

    #[test]
    fn the_man_page_has_every_visible_command_and_escapes_roff() {
        let mut out = Vec::new();
        man_page(&mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(
            page.starts_with(".ie") || page.contains(".TH luzia"),
            "{page}"
        );
        for command in ["jobs", "tui", "status", "kill", "man"] {
            assert!(page.contains(&format!(".SS {command}\n")), "no {command}");
        }
        assert!(!page.contains(".SS supervise"));
        assert!(page.contains("\\-\\-read\\-only"));
        assert_eq!(roff_escape(".hidden"), "\\&.hidden");
    }
}
