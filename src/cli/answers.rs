//! The operator's side of the conversation: listing what waits, answering, approving, denying.

use clap::Args;

use crate::jobs::JobId;

#[derive(Debug, Args)]
pub struct QuestionsArgs {
    /// Only jobs of this project (repeatable)
    #[arg(long = "project", short = 'p', value_name = "P")]
    pub projects: Vec<String>,
    /// Print JSON: every pending question and gate with its job and full content
    #[arg(long)]
    pub json: bool,
    /// The questions and gates of this host of the config (`[hosts.NAME]`, over ssh; `local` is this
    /// machine) instead of this machine's (repeatable)
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// The questions and gates of this machine and of every host of the config, with a HOST column
    #[arg(long, conflicts_with = "hosts")]
    pub all_hosts: bool,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// Answer this question only (its id, as `luzia questions` shows it); refused, saying who
    /// answered it, once it is no longer pending. Without it: the question pending now
    #[arg(long, value_name = "QN")]
    pub question: Option<String>,
    /// The answer: for a choice, an option or its number; for confirm, yes or no
    #[arg(required = true, num_args = 1.., value_name = "ANSWER")]
    pub answer: Vec<String>,
    #[command(flatten)]
    pub relay: Relay,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// Decide this gate only (its id, as `luzia questions` shows it); refused, saying who
    /// decided it, once it is no longer pending. Without it: the gate pending now
    #[arg(long, value_name = "GN")]
    pub gate: Option<String>,
    /// Why, recorded with the decision (the agent receives it)
    #[arg(long, value_name = "R")]
    pub reason: Option<String>,
    /// Approve for the session: the agent stops asking for requests like this one (what that
    /// covers is the agent's: `luzia questions` says it). Refused at a gate that does not offer it
    #[arg(long)]
    pub always: bool,
    #[command(flatten)]
    pub relay: Relay,
}

#[derive(Debug, Args)]
pub struct DenyArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// Decide this gate only (its id, as `luzia questions` shows it); without it: the gate
    /// pending now
    #[arg(long, value_name = "GN")]
    pub gate: Option<String>,
    /// Why: the agent receives it word for word
    #[arg(long, value_name = "R", required = true)]
    pub reason: String,
    #[command(flatten)]
    pub relay: Relay,
}

/// An answer or decision given elsewhere and relayed by another luzia (the Telegram bridge
/// answering on this host over ssh): who gave it, and through what.
#[derive(Debug, Default, Args)]
pub struct Relay {
    /// Who the answer is given for, recorded as its author instead of this user (another
    /// luzia relaying an answer given elsewhere, such as `telegram:@bruno (111)`)
    #[arg(long, value_name = "WHO", hide = true, requires = "source")]
    pub by: Option<String>,
    /// Through what the relayed answer was given (`telegram`), recorded as its source
    #[arg(long, value_name = "SOURCE", hide = true, requires = "by")]
    pub source: Option<String>,
}
