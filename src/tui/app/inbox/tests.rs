//! Approving a gate for the session from the inbox: offered only where the gate offers it.

use crossterm::event::KeyCode;

use crate::config::KeyBindings;
use crate::jobs::hitl::operator::Scope;
use crate::tui::action::KeyMap;
use crate::tui::app::Mode;
use crate::tui::effect::Effect;
use crate::tui::event::Event;
use crate::tui::testing::*;

fn with_session_gate(opts: crate::tui::app::Options) -> crate::tui::app::App {
    let (mut app, _) = app_with(opts, 160, 45);
    let job = session_gate_job();
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    app
}

/// Opens the inbox on the session gate (it is the newest item: one step back from the first).
fn open_on_session_gate(app: &mut crate::tui::app::App) {
    press(app, [ch('i'), key(KeyCode::BackTab)]);
    match &app.mode {
        Mode::Inbox(inbox) => assert_eq!(inbox.target, "g2", "{inbox:?}"),
        other => panic!("the inbox is open: {other:?}"),
    }
}

#[test]
fn a_gate_that_offers_the_session_is_approved_for_it_with_its_key() {
    let mut app = with_session_gate(options(false));
    open_on_session_gate(&mut app);
    assert_eq!(
        press(&mut app, [ch('A')]),
        [Effect::Decide {
            job: id("160100-gemi"),
            gate_id: "g2".into(),
            approved: true,
            scope: Scope::Session,
            reason: String::new(),
        }]
    );
}

#[test]
fn a_gate_that_does_not_offer_it_is_not_approved_for_the_session() {
    let mut app = app(160, 45);
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(press(&mut app, [ch('A')]).is_empty(), "nothing is sent");
    let Mode::Inbox(inbox) = &app.mode else {
        panic!("still in the inbox");
    };
    let (ok, said) = inbox.result.clone().unwrap();
    assert!(!ok);
    assert_eq!(
        said,
        "this gate cannot be approved for the session (its agent did not offer it): a \
         approves it once"
    );
    assert!(!inbox.sending, "the gate can still be decided");
    assert!(matches!(
        &press(&mut app, [ch('a')])[..],
        [Effect::Decide {
            scope: Scope::Once,
            ..
        }]
    ));
}

#[test]
fn the_session_key_is_configurable_and_a_read_only_cockpit_sends_nothing() {
    let bindings = KeyBindings::from_toml("[inbox]\napprove_session = \"S\"").unwrap();
    let mut opts = options(false);
    opts.keymap = KeyMap::new(&bindings).unwrap();
    let mut app = with_session_gate(opts);
    open_on_session_gate(&mut app);
    assert!(
        press(&mut app, [ch('A')]).is_empty(),
        "A is no longer bound"
    );
    assert!(matches!(
        &press(&mut app, [ch('S')])[..],
        [Effect::Decide {
            scope: Scope::Session,
            ..
        }]
    ));

    let mut app = with_session_gate(options(true));
    open_on_session_gate(&mut app);
    assert!(press(&mut app, [ch('A')]).is_empty());
}
