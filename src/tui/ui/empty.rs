//! What an empty jobs table says: why it is empty, and the next step. A root with no jobs names
//! the ways to start one; a view or a filter that hides every job says how many it hides and
//! how to clear it.

use crate::tui::action::NormalAction;
use crate::tui::app::App;
use crate::tui::app::table::view::in_projects;

/// The lines the empty table shows, most telling first: at most `layout::EMPTY_TABLE_ROWS`.
pub fn lines(app: &App) -> Vec<String> {
    let key = |a| app.opts.keymap.first_key(a);
    if !app.loaded {
        return vec!["reading jobs…".to_string()];
    }
    if let Some(e) = &app.scan_error {
        return vec![e.clone()];
    }
    if app.jobs.is_empty() {
        let mut lines = vec![format!("no jobs under {} yet", app.opts.root.display())];
        if !app.opts.read_only {
            lines.push(format!(
                "{} dispatches a task from here",
                key(NormalAction::NewTask)
            ));
        }
        lines.push("luzia run \"task\" inside a git repository starts one from a shell".into());
        lines.push(format!(
            "luzia doctor checks the setup · {} lists every key",
            key(NormalAction::Help)
        ));
        return lines;
    }
    let table = &app.table;
    let back = key(NormalAction::Back);
    let in_tab = || {
        app.jobs
            .values()
            .filter(|j| table.tab.admits(j) && in_projects(j, &table.projects))
            .count()
    };
    let views = format!(
        "{}/{} changes the view",
        key(NormalAction::PrevTab),
        key(NormalAction::NextTab)
    );
    if !table.filter.is_empty() {
        let n = in_tab();
        return vec![
            format!(
                "the filter \"{}\" hides {} of this view",
                crate::jobs::text::sanitize::plain_text(&table.filter),
                jobs(n)
            ),
            format!("{back} clears it"),
        ];
    }
    let in_projects_shown = app
        .jobs
        .values()
        .filter(|j| in_projects(j, &table.projects))
        .count();
    if in_projects_shown == 0 {
        return vec![
            format!(
                "the project filter ({}) hides all {}",
                crate::jobs::text::sanitize::plain_text(&table.projects.join(",")),
                jobs(app.jobs.len())
            ),
            format!(
                "{} picks another project, {back} clears it",
                key(NormalAction::PickProject)
            ),
        ];
    }
    vec![
        format!("no jobs in the {} view", table.tab.title()),
        format!(
            "{views} ({} shows all {})",
            crate::tui::app::table::view::Tab::All.title(),
            jobs(in_projects_shown)
        ),
    ]
}

/// `1 job`, `3 jobs`.
fn jobs(n: usize) -> String {
    if n == 1 {
        "1 job".to_string()
    } else {
        format!("{n} jobs")
    }
}
