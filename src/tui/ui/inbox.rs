//! The inbox popup: one question or gate, with what it needs to be answered well (the job,
//! how long it has waited, the countdown, the context, the agent's last lines) and the control
//! to answer it.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::jobs::model::job::Standing;
use crate::jobs::model::time::format_duration;
use crate::jobs::model::waiting::QuestionType;
use crate::jobs::text::sanitize::{plain_text, sanitize_line};
use crate::jobs::{Gate, Job, Question};
use crate::tui::action::{InboxAction as A, KeyMap, ModeAction, Section};
use crate::tui::app::App;
use crate::tui::app::inbox::{Inbox, InboxKind};
use crate::tui::theme::Theme;

/// Lines of the agent's output shown under the question.
const OUTPUT_LINES: usize = 5;

pub fn render(app: &App, inbox: &Inbox, theme: &Theme, f: &mut Frame, area: Rect) {
    let Some(job) = app.jobs.get(&inbox.item.job) else {
        return;
    };
    let lines = body(app, inbox, job, theme);
    let width = area.width.saturating_sub(4).min(100);
    let editor_height = if inbox.editor.is_some() { 5 } else { 0 };
    let height = (lines.len() as u16 + editor_height + 2).min(area.height.saturating_sub(2));
    let [v] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(area);
    let [rect] = Layout::horizontal([Constraint::Length(width)])
        .flex(Flex::Center)
        .areas(v);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.warn())
        .title(Span::styled(title(app, inbox, job), theme.title()))
        .title_bottom(Line::from(Span::styled(
            keys_hint(app, inbox, job),
            theme.dim(),
        )));
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let [text_area, editor_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(editor_height)]).areas(inner);
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), text_area);
    if let Some(editor) = &inbox.editor {
        let mut e = editor.editor().clone();
        let label = if inbox.editing_reason() {
            " reason for the denial (the agent reads it) "
        } else {
            " your answer "
        };
        e.set_block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.accent())
                .title(label),
        );
        f.render_widget(&e, editor_area);
    }
}

/// `question · 1 of 2 · <job> · <project>`.
fn title(app: &App, inbox: &Inbox, job: &Job) -> String {
    let items = app.inbox_items();
    let pos = items
        .iter()
        .position(|i| *i == inbox.item)
        .map_or(String::new(), |p| {
            format!("{} of {} · ", p + 1, items.len())
        });
    let what = match inbox.item.kind {
        InboxKind::Question => "question",
        InboxKind::Gate => "approval gate",
    };
    format!(" {what} · {pos}{} · {} ", job.id, plain_text(job.project()))
}

/// The outcome of the last answer, the question or gate, and the job's last lines.
fn body<'a>(app: &App, inbox: &Inbox, job: &Job, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines: Vec<Line> = Vec::new();
    if let Some((ok, msg)) = &inbox.result {
        let style = if *ok {
            theme.status(crate::jobs::Status::Completed)
        } else {
            theme.error()
        };
        lines.push(Line::from(Span::styled(
            format!("{} {msg}", if *ok { "✓" } else { "✗" }),
            style,
        )));
    }
    if job.standing() == Standing::AnswerThenRetry {
        lines.push(Line::from(Span::styled(
            job.standing().note(),
            theme.warn(),
        )));
    }
    match (inbox.item.kind, &job.question, &job.gate) {
        (InboxKind::Question, Some(q), _) => question_lines(q, job, inbox, app, theme, &mut lines),
        (InboxKind::Gate, _, Some(g)) => gate_lines(g, app, theme, &mut lines),
        _ => {}
    }
    output_lines(app, job, theme, &mut lines);
    lines
}

fn waited(since: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    since.map_or("waiting".into(), |t| {
        format!("waiting {}", format_duration((now - t).num_seconds()))
    })
}

/// Seconds until `deadline` (never negative).
fn countdown(deadline: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<i64> {
    Some((deadline? - now).num_seconds().max(0))
}

fn question_lines<'a>(
    q: &Question,
    job: &Job,
    inbox: &Inbox,
    app: &App,
    theme: &Theme,
    lines: &mut Vec<Line<'a>>,
) {
    let (standing, now, km) = (job.standing(), app.now, &app.opts.keymap);
    let mut status = waited(q.asked_at, now);
    // Only a waiting agent will take its default; one that stopped waits for a retry.
    if let Some(left) = countdown(q.deadline(), now).filter(|_| standing == Standing::Pending) {
        let default = q
            .default_if_timeout
            .as_deref()
            .map_or("gives up".to_string(), |d| {
                format!("takes '{}'", plain_text(d))
            });
        status.push_str(&format!(
            " · the agent {default} in {}",
            format_duration(left)
        ));
    }
    lines.push(Line::from(Span::styled(status, theme.dim())));
    if !q.context.is_empty() {
        lines.push(Line::from(vec![
            Span::styled("context ", theme.dim()),
            Span::raw(plain_text(&q.context)),
        ]));
    }
    if let Some(note) = &q.note {
        lines.push(Line::from(Span::styled(
            format!("note: {note}"),
            theme.warn(),
        )));
    }
    lines.push(Line::default());
    if !q.header.is_empty() {
        lines.push(Line::from(Span::styled(
            plain_text(&q.header),
            theme.accent(),
        )));
    }
    for l in q.question.lines() {
        lines.push(Line::from(Span::styled(
            sanitize_line(l.as_bytes()).plain(),
            theme.title(),
        )));
    }
    lines.push(Line::default());
    if app.opts.read_only {
        read_only_lines(q, theme, lines);
    } else {
        answer_lines(q, inbox, km, theme, lines);
    }
}

/// What a read-only cockpit shows under a question: the options, none picked, and that it
/// cannot answer (no key is offered for what it cannot do).
fn read_only_lines<'a>(q: &Question, theme: &Theme, lines: &mut Vec<Line<'a>>) {
    if q.kind == QuestionType::Choice {
        for (i, o) in q.options.iter().enumerate() {
            lines.push(Line::from(format!("   {}) {} ", i + 1, plain_text(o))));
            if let Some(d) = q.descriptions.get(i).filter(|d| !d.is_empty()) {
                lines.push(Line::from(Span::styled(
                    format!("      {}", plain_text(d)),
                    theme.dim(),
                )));
            }
        }
    }
    lines.push(Line::from(Span::styled(READ_ONLY_QUESTION, theme.warn())));
}

/// What a read-only inbox says in place of the keys that answer.
const READ_ONLY_QUESTION: &str = "read-only: this cockpit shows the question, it cannot answer it";
const READ_ONLY_GATE: &str = "read-only: this cockpit shows the gate, it cannot decide it";

/// What the operator answers with: the options of a choice, or the keys of yes and no.
fn answer_lines<'a>(
    q: &Question,
    inbox: &Inbox,
    km: &KeyMap,
    theme: &Theme,
    lines: &mut Vec<Line<'a>>,
) {
    match q.kind {
        QuestionType::Choice => {
            if q.multi_select {
                lines.push(Line::from(Span::styled("pick one or several", theme.dim())));
            }
            for (i, o) in q.options.iter().enumerate() {
                let chosen = i == inbox.selected;
                let style = if chosen {
                    theme.selected().add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                };
                let mark = match (q.multi_select, inbox.picked.contains(&i)) {
                    (false, _) => "",
                    (true, true) => "[x] ",
                    (true, false) => "[ ] ",
                };
                lines.push(Line::from(Span::styled(
                    format!(
                        " {} {mark}{}) {} ",
                        if chosen { "›" } else { " " },
                        i + 1,
                        plain_text(o)
                    ),
                    style,
                )));
                if let Some(d) = q.descriptions.get(i).filter(|d| !d.is_empty()) {
                    lines.push(Line::from(Span::styled(
                        format!("      {}", plain_text(d)),
                        theme.dim(),
                    )));
                }
            }
        }
        QuestionType::Confirm => lines.push(Line::from(Span::styled(
            format!("{} yes   {} no", km.first_key(A::Yes), km.first_key(A::No)),
            theme.accent(),
        ))),
        QuestionType::Text => {}
    }
}

fn gate_lines<'a>(g: &Gate, app: &App, theme: &Theme, lines: &mut Vec<Line<'a>>) {
    let (km, now) = (&app.opts.keymap, app.now);
    let mut status = waited(g.awaiting_since, now);
    if let Some(left) = countdown(g.deadline(), now) {
        status.push_str(&format!(
            " · approved automatically in {}",
            format_duration(left)
        ));
    }
    lines.push(Line::from(Span::styled(status, theme.dim())));
    if !g.context.is_empty() {
        lines.push(Line::from(vec![
            Span::styled("context ", theme.dim()),
            Span::raw(plain_text(&g.context)),
        ]));
    }
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("gate ", theme.dim()),
        Span::styled(plain_text(&g.gate), theme.title()),
    ]));
    for l in g.description.lines() {
        lines.push(Line::from(Span::styled(
            sanitize_line(l.as_bytes()).plain(),
            theme.title(),
        )));
    }
    if let Some(covers) = &g.allow_session {
        lines.push(Line::from(vec![
            Span::styled("session ", theme.dim()),
            Span::raw(session_words(covers)),
        ]));
    }
    lines.push(Line::default());
    if app.opts.read_only {
        lines.push(Line::from(Span::styled(READ_ONLY_GATE, theme.warn())));
        return;
    }
    let session = match g.allow_session {
        Some(_) => format!(
            "   {} approve for the session",
            km.first_key(A::ApproveSession)
        ),
        None => String::new(),
    };
    lines.push(Line::from(Span::styled(
        format!(
            "{} approve{session}   {} deny (with a reason)",
            km.first_key(A::Approve),
            km.first_key(A::Deny)
        ),
        theme.accent(),
    )));
}

/// What approving for the session covers, in the agent's words (when it says any).
fn session_words(covers: &str) -> String {
    let said = plain_text(covers.trim());
    if said.is_empty() {
        "approving for it, the agent stops asking for requests like this one".into()
    } else {
        format!("approving for it takes the agent's \"{said}\"")
    }
}

fn output_lines<'a>(app: &App, job: &Job, theme: &Theme, lines: &mut Vec<Line<'a>>) {
    if app.log.job.as_ref() != Some(&job.id) || app.log.lines.is_empty() {
        return;
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled("last output", theme.dim())));
    let start = app.log.lines.len().saturating_sub(OUTPUT_LINES);
    for raw in app.log.lines.iter().skip(start) {
        let styled = sanitize_line(&raw.bytes);
        let spans: Vec<Span> = styled
            .segments
            .into_iter()
            .map(|s| Span::styled(s.text, theme.log_style(&s.style)))
            .collect();
        lines.push(Line::from(spans));
    }
}

fn keys_hint(app: &App, inbox: &Inbox, job: &Job) -> String {
    let km = &app.opts.keymap;
    let k = |a: A| km.first_key(a);
    let (next, close) = (k(A::Next), k(A::Close));
    if app.opts.read_only {
        return format!(" read-only: answers are off · {next} next · {close} close ");
    }
    if inbox.sending {
        return " sending… ".into();
    }
    let kind = job.question.as_ref().map(|q| q.kind);
    let new_line = |n| km.shown(Section::Inbox, A::NewLine.index(), n, " or ");
    match (inbox.item.kind, kind) {
        (InboxKind::Gate, _) if inbox.editor.is_some() => format!(
            " {} deny · {} new line · {close} back ",
            k(A::Send),
            new_line(1)
        ),
        (InboxKind::Gate, _) if job.gate.as_ref().is_some_and(|g| g.allow_session.is_some()) => {
            format!(
                " {} approve · {} for the session · {} deny · {next} next · {close} close ",
                k(A::Approve),
                k(A::ApproveSession),
                k(A::Deny)
            )
        }
        (InboxKind::Gate, _) => format!(
            " {} approve · {} deny · {next} next · {close} close ",
            k(A::Approve),
            k(A::Deny)
        ),
        (_, Some(QuestionType::Choice))
            if job.question.as_ref().is_some_and(|q| q.multi_select) =>
        {
            format!(
                " {}{} or 1-9 move · {} pick · {} send · {next} next · {close} close ",
                k(A::Up),
                k(A::Down),
                k(A::Toggle),
                k(A::Send)
            )
        }
        (_, Some(QuestionType::Choice)) => format!(
            " {}{} or 1-9 pick · {} send · {next} next · {close} close ",
            k(A::Up),
            k(A::Down),
            k(A::Send)
        ),
        (_, Some(QuestionType::Confirm)) => format!(
            " {} / {} · {next} next · {close} close ",
            k(A::Yes),
            k(A::No)
        ),
        _ => format!(
            " {} send · {} new line · {next} next · {close} close ",
            k(A::Send),
            new_line(2)
        ),
    }
}
