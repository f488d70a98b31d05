//! Remote hosts on screen: each job's host and id as its host knows it, the per-host counts of
//! the header, the rows of hosts that cannot be reached, and the age of a stale job. None of it
//! is drawn when no remote host is shown.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::table::{cut, memo};
use crate::jobs::model::time::format_duration_coarse;
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::{Job, Status};
use crate::tui::app::App;
use crate::tui::app::fleet::{Host, LOCAL, Link};
use crate::tui::app::table::view::in_projects;
use crate::tui::theme::Theme;

/// The widest a host's name is in the header (cut with an ellipsis beyond).
const HEADER_NAME: usize = 10;

/// The id a person knows the job by: its own id on its host (a queued task's queue id).
pub fn id_text(job: &Job) -> String {
    id_str(job).into_owned()
}

/// [`id_text`], borrowed from the job where it can be (a local job's id): the columns' widths
/// measure every id of the root for a frame.
pub fn id_str(job: &Job) -> std::borrow::Cow<'_, str> {
    match job.id.host() {
        Some(_) if !job.id.is_queued() => job.id.local_id().to_string().into(),
        None if !job.id.is_queued() => job.id.as_str().into(),
        _ => job.shown_id().into(),
    }
}

/// The host the job is on: `local` for this machine's.
pub fn host_label(job: &Job) -> &str {
    job.id.host().unwrap_or(LOCAL)
}

/// `stale 2m` for a job whose host dropped 2 minutes ago, if it did.
pub fn stale_text(app: &App, job: &Job) -> Option<String> {
    let since = app.stale_since(&job.id)?;
    let age = (app.now - since).num_seconds();
    Some(format!("stale {}", format_duration_coarse(age)))
}

/// How many jobs of each host run and wait for a person (of the projects shown): this machine
/// first, then the remote hosts in order.
fn host_counts(app: &App) -> Vec<(usize, usize)> {
    thread_local! {
        static COUNTS: super::table::Memo<Vec<(usize, usize)>> =
            const { std::cell::RefCell::new(None) };
    }
    memo(&COUNTS, app, 0, || {
        let mut counts = vec![(0, 0); app.hosts.len() + 1];
        for job in app
            .jobs
            .values()
            .filter(|j| in_projects(j, &app.table.projects))
        {
            let at = match job.id.host() {
                None => 0,
                Some(name) => match app.hosts.iter().position(|h| h.name == name) {
                    Some(i) => i + 1,
                    None => continue,
                },
            };
            match job.status {
                Status::Running => counts[at].0 += 1,
                Status::Waiting | Status::NeedsInput => counts[at].1 += 1,
                _ => {}
            }
        }
        counts
    })
}

/// The header's hosts: `local 3● 1◆  gpu2 5●  gpu3 ✕ unreachable 2m` (where `narrow`,
/// `local 3● 1◆ gpu2 5● gpu3 ✕`).
pub fn header_spans(app: &App, theme: &Theme, narrow: bool) -> Vec<Span<'static>> {
    if app.hosts.is_empty() {
        return vec![];
    }
    let counts = host_counts(app);
    let gap = if narrow { " " } else { "  " };
    let mut spans = vec![Span::styled("│ ", theme.dim())];
    let up = |spans: &mut Vec<Span<'static>>, name: &str, (run, wait): (usize, usize)| {
        spans.push(Span::styled(cut(name, HEADER_NAME, theme), theme.title()));
        if run > 0 || wait == 0 {
            let style = if run > 0 {
                theme.status(Status::Running)
            } else {
                theme.dim()
            };
            spans.push(Span::styled(
                format!(" {run}{}", theme.symbol(Status::Running)),
                style,
            ));
        }
        if wait > 0 {
            spans.push(Span::styled(
                format!(" {wait}{}", theme.symbol(Status::Waiting)),
                theme.status(Status::Waiting),
            ));
        }
        spans.push(Span::raw(gap));
    };
    up(&mut spans, LOCAL, counts[0]);
    for (host, n) in app.hosts.iter().zip(&counts[1..]) {
        match &host.link {
            Link::Up { .. } => up(&mut spans, &host.name, *n),
            Link::Connecting => {
                spans.push(Span::styled(
                    cut(&host.name, HEADER_NAME, theme),
                    theme.dim(),
                ));
                let what = if narrow { " …" } else { " connecting…" };
                spans.push(Span::styled(what, theme.dim()));
                spans.push(Span::raw(gap));
            }
            Link::Down { .. } | Link::Incompatible { .. } => {
                spans.push(Span::styled(
                    cut(&host.name, HEADER_NAME, theme),
                    theme.title(),
                ));
                let what = if narrow {
                    format!(" {}", theme.down_mark())
                } else {
                    format!(" {} {}", theme.down_mark(), trouble_word(app, host))
                };
                spans.push(Span::styled(what, theme.error()));
                spans.push(Span::raw(gap));
            }
        }
    }
    spans
}

/// `unreachable 2m`, `incompatible`: what is wrong with the host, and since when.
fn trouble_word(app: &App, host: &Host) -> String {
    let age = host
        .trouble_since()
        .map(|since| format_duration_coarse((app.now - since).num_seconds()));
    match (&host.link, age) {
        (Link::Incompatible { .. }, _) => "incompatible".into(),
        (_, Some(age)) => format!("unreachable {age}"),
        (_, None) => "unreachable".into(),
    }
}

/// The rows of hosts that cannot be reached, drawn over the table's first `rows` rows (left
/// blank for them): not jobs, so not selectable; each says what is wrong, its mark and host
/// under the STATUS and HOST columns (`lead`: their widths), what went wrong across the rest.
pub fn render_rows(
    app: &App,
    theme: &Theme,
    f: &mut Frame,
    table: Rect,
    rows: usize,
    lead: (u16, u16),
) {
    let troubled: Vec<&Host> = app.troubled_hosts().collect();
    let width = usize::from(table.width.saturating_sub(2));
    let more = troubled.len().saturating_sub(rows);
    for (i, host) in troubled.iter().take(rows).enumerate() {
        let line = if i + 1 == rows && more > 0 {
            let names: Vec<&str> = troubled[i..].iter().map(|h| h.name.as_str()).collect();
            let said = format!("{} hosts cannot be used: {}", more + 1, names.join(", "));
            Line::from(vec![
                Span::styled(format!("{} ", theme.down_mark()), theme.error()),
                Span::styled(cut(&said, width.saturating_sub(2), theme), theme.error()),
            ])
        } else {
            host_row(app, host, theme, width, lead)
        };
        let y = table.y + 2 + i as u16;
        let area = Rect::new(table.x + 1, y, table.width.saturating_sub(2), 1);
        f.render_widget(Paragraph::new(line), area);
    }
}

/// `✕ unreachable gpu3  for 2m: ssh: connect to host gpu3 port 22: Connection refused  retrying…`
/// (where the status column is too narrow for that word: `✕ gpu3  unreachable 2m: ssh: …`).
fn host_row(
    app: &App,
    host: &Host,
    theme: &Theme,
    width: usize,
    (status, host_col): (u16, u16),
) -> Line<'static> {
    let pad = |s: &str, w: usize| {
        let cut = cut(s, w, theme);
        let room = w.saturating_sub(crate::jobs::text::width::width(&cut));
        format!("{cut}{} ", " ".repeat(room))
    };
    let trouble = trouble_word(app, host);
    let word = match host.link {
        Link::Incompatible { .. } => "version",
        _ => "unreachable",
    };
    let worded = format!("{} {word}", theme.down_mark());
    let words = crate::jobs::text::width::width(&worded) <= usize::from(status);
    let mark = if words {
        worded
    } else {
        theme.down_mark().to_string()
    };
    let name = match host_col {
        0 => format!("{}  ", cut(&host.name, HEADER_NAME * 2, theme)),
        w => pad(&host.name, usize::from(w)),
    };
    let said = match (words, host.trouble_since(), &host.link) {
        (true, _, Link::Incompatible { .. }) => String::new(),
        (true, Some(since), _) => {
            format!(
                "for {}: ",
                format_duration_coarse((app.now - since).num_seconds())
            )
        }
        _ => format!("{trouble}: "),
    };
    let mut spans = vec![
        Span::styled(pad(&mark, usize::from(status).max(1)), theme.error()),
        Span::styled(name, theme.title().add_modifier(Modifier::BOLD)),
        Span::styled(said, theme.error()),
    ];
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let retrying = if host.retrying { "  retrying…" } else { "" };
    let room = width.saturating_sub(used + retrying.chars().count());
    let error = plain_text(host.trouble().unwrap_or_default());
    spans.push(Span::styled(cut(&error, room, theme), Style::new()));
    spans.push(Span::styled(retrying, theme.dim()));
    Line::from(spans)
}
