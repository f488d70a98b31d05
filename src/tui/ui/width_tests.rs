//! Text whose width terminals measure each their own way (emoji sequences joined with zero-width
//! joiners, skin tones, variation selectors, combining accents, halfwidth sound marks) drawn in
//! task names, output lines and questions: snapshots at 80x24 and 160x45, and a property that
//! every row a terminal is sent fills exactly the terminal's width, measured as the drawing
//! measures it and character by character as a terminal advances.

use crossterm::event::KeyCode;
use proptest::prelude::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

use super::render_with;
use crate::jobs::Job;
use crate::jobs::text::width::{char_width, grapheme_width};
use crate::tui::app::App;
use crate::tui::event::Event;
use crate::tui::testing::*;
use crate::tui::theme::Theme;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 45)];

const FAMILY: &str = "👨\u{200D}👩\u{200D}👧\u{200D}👦";

fn buffer(app: &App) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    term.draw(|f| render_with(app, &Theme::default(), f))
        .unwrap();
    term.backend().buffer().clone()
}

/// The fixture with `task` as the task of every job, `project` as the project of the live
/// ones, `question` as the text of the choice question, and `log` as the selected job's output.
fn app_with_text(w: u16, h: u16, task: &str, project: &str, question: &str, log: &[&str]) -> App {
    let mut app = app(w, h);
    let mut read: Vec<(crate::jobs::JobId, Option<Job>)> = Vec::new();
    for mut job in jobs() {
        if let Some(m) = job.meta.as_mut() {
            m.task = task.into();
            if job.status.is_active() {
                m.project = project.into();
            }
        }
        if let Some(q) = job.question.as_mut() {
            q.question = question.to_string();
            q.options = vec![format!("{question} one"), "two ❤\u{FE0F}".into()];
        }
        read.push((job.id.clone(), Some(job)));
    }
    app.update(Event::JobsRead(read), now());
    let id = app.table.selected.clone().unwrap();
    app.update(
        Event::LogLoaded {
            id,
            lines: lines(log),
            error: None,
        },
        now(),
    );
    app
}

fn unicode_app(w: u16, h: u16) -> App {
    app_with_text(
        w,
        h,
        &format!("Sort the {FAMILY} photos, café cre\u{300}me ❤\u{FE0F} 日本語 👍\u{1F3FD} done"),
        "mu\u{301}sica",
        &format!("Deploy the {FAMILY} album to 🇫🇷 or ｶﾞｲﾄﾞ?"),
        &[
            "plain ascii line",
            &format!("family {FAMILY} end"),
            "accents: e\u{301}te\u{301} z\u{301}\u{302}\u{303}algo",
            // An accent coloured apart from its letter.
            "\x1b[31mcafe\x1b[32m\u{301}\x1b[0m red then green",
            "hearts ❤\u{FE0F}❤\u{FE0E} tones 👍\u{1F3FD}👋\u{1F3FF} flag 🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}",
            "zero\u{200B}width\u{2060}joiner\u{FEFF}soft\u{AD}hyphen",
            "\u{301}\u{302} marks with no letter",
            "halfwidth ｶﾞｷﾞｸﾞ and 日本語のテキスト",
        ],
    )
}

#[test]
fn unicode_on_every_screen() {
    for (w, h) in SIZES {
        let mut app = unicode_app(w, h);
        insta::assert_snapshot!(format!("unicode_main_{w}x{h}"), view(&buffer(&app)));
        press(&mut app, [ch('w')]);
        insta::assert_snapshot!(format!("unicode_wrapped_{w}x{h}"), view(&buffer(&app)));
        let mut app = unicode_app(w, h);
        press(&mut app, [ch('i')]);
        insta::assert_snapshot!(format!("unicode_inbox_{w}x{h}"), view(&buffer(&app)));
        let mut app = unicode_app(w, h);
        press(&mut app, [ch('v')]);
        insta::assert_snapshot!(format!("unicode_detail_{w}x{h}"), view(&buffer(&app)));
        let mut app = unicode_app(w, h);
        press(&mut app, [key(KeyCode::Tab), ch('/')]);
        press(&mut app, "te\u{301}".chars().map(ch));
        press(&mut app, [key(KeyCode::Enter)]);
        insta::assert_snapshot!(format!("unicode_search_{w}x{h}"), view(&buffer(&app)));
    }
}

/// The screen as a terminal would hold it: each row as the text sent for it, the cells a wide
/// character covers left out.
fn view(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut x = 0;
        while x < buf.area.width {
            let sym = buf[(x, y)].symbol();
            out.push_str(sym);
            x += (grapheme_width(sym) as u16).max(1);
        }
        out.push('\n');
    }
    out
}

/// Every row fills exactly the width: each cell's symbol takes the columns the drawing gave it,
/// counted as a terminal counts, character by character.
fn rows_fit(buf: &Buffer) -> Result<(), TestCaseError> {
    for y in 0..buf.area.height {
        let (mut x, mut advanced) = (0u16, 0usize);
        while x < buf.area.width {
            let sym = buf[(x, y)].symbol();
            let drawn = grapheme_width(sym).max(1);
            let terminal: usize = sym.chars().map(char_width).sum();
            prop_assert_eq!(
                terminal,
                drawn,
                "row {} column {}: {:?} is drawn in {} columns, a terminal gives it {}",
                y,
                x,
                sym,
                drawn,
                terminal
            );
            advanced += terminal;
            x += drawn as u16;
        }
        prop_assert_eq!(advanced, buf.area.width as usize, "row {}", y);
    }
    Ok(())
}

fn text() -> impl Strategy<Value = String> {
    crate::jobs::text::tests::hostile_line()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_row_fills_the_terminal_exactly(
        task in text(),
        project in text(),
        question in text(),
        log in prop::collection::vec(text(), 0..12),
        wrap in any::<bool>(),
    ) {
        let log: Vec<&str> = log.iter().map(String::as_str).collect();
        for (w, h) in SIZES {
            let mut app = app_with_text(w, h, &task, &project, &question, &log);
            if wrap {
                press(&mut app, [ch('w')]);
            }
            rows_fit(&buffer(&app))?;
            press(&mut app, [ch('i')]);
            rows_fit(&buffer(&app))?;
        }
    }
}
