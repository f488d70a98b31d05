//! One update acted on: a button pressed or a reply, from the configured chat and one of the
//! `allowed_users`, given to the instance its message was posted for (`answer`). A press from
//! anyone else decides nothing, is answered with a refusal and logged. A press on a post that
//! is closed, or that luzia no longer knows, decides nothing either: it is told how it ended.
//! Nor does a press of a button the post never had (Approve for session on a gate that did not
//! offer it: forged, or an old message's): it is told why, and logged. The offset moves past
//! the update, saved, once it is handled.

use serde_json::{Value, json};

use super::answer::{Act, Applied};
use super::format::User;
use super::press::{self, Action};
use super::state::{Posted, What};
use super::updates::{self, Input};
use super::worker::{Worker, log};
use crate::jobs::hitl::operator::{Scope, Verdict};
use crate::jobs::text::sanitize::{ellipsize, plain_text};

/// Telegram shows at most 200 characters of a press's answer.
const NOTICE_CAP: usize = 190;

impl Worker {
    pub(super) fn on_update(&mut self, update: &Value) {
        let Some(id) = updates::update_id(update) else {
            return;
        };
        if id < self.state.offset {
            return; // handled before a restart
        }
        match updates::read(update) {
            Input::Press {
                query_id,
                from,
                chat,
                data,
            } => {
                if !chat.is(&self.chat) {
                    self.notice(&query_id, "This chat does not answer luzia's questions.");
                } else if !self.allowed.contains(&from.id) {
                    self.refuse_press(&query_id, &from);
                } else {
                    self.on_press(&query_id, &from, &data);
                }
            }
            Input::Reply {
                id: reply_id,
                from,
                chat,
                to,
                text,
            } if chat.is(&self.chat) => {
                if let Some(key) = self.state.by_message(to) {
                    self.on_reply(&key, reply_id, &from, &text);
                }
            }
            Input::Reply { .. } | Input::Other => {}
        }
        self.state.offset = id + 1;
        self.save();
    }

    fn refuse_press(&mut self, query_id: &str, from: &User) {
        log(&format!(
            "refused a press by {} ({}): not in [telegram] allowed_users",
            from.name(),
            from.id
        ));
        let text = format!(
            "Not counted: your id {} is not in luzia's allowed_users.",
            from.id
        );
        self.notice(query_id, &text);
    }

    fn on_press(&mut self, query_id: &str, from: &User, data: &str) {
        let post = press::read(data).and_then(|(serial, action)| {
            self.state
                .by_serial(serial)
                .map(|(k, p)| (k.clone(), p.clone(), action))
        });
        let Some((key, posted, action)) = post else {
            self.notice(query_id, "luzia no longer knows this question.");
            return;
        };
        if let Some(c) = &posted.closed {
            let text = format!("Already settled: {}", c.outcome);
            self.notice(query_id, &text);
            return;
        }
        let act = match act_of(&posted, action) {
            Ok(Some(act)) => act,
            Ok(None) => {
                self.ask_reason(&key, query_id);
                return;
            }
            Err(why) => {
                log(&format!(
                    "{key}: refused a press by {} ({}): {why}",
                    from.name(),
                    from.id
                ));
                self.notice(query_id, why);
                return;
            }
        };
        let applied = self.target.apply(&posted, act, from);
        log(&format!(
            "{key}: press by {} ({}): {applied:?}",
            from.name(),
            from.id
        ));
        let notice = match &applied {
            Applied::Done(w) => format!("Done: {w}"),
            Applied::Already(w) => format!("Already settled: {w}"),
            Applied::Refused(w) => w.clone(),
            Applied::Failed(w) => format!("Not done: {w}"),
        };
        self.notice(query_id, &notice);
        self.settle(&key, applied);
    }

    /// Deny asks for the reason: a message the person replies to.
    fn ask_reason(&mut self, key: &str, query_id: &str) {
        let Some(p) = self.state.posted.get(key) else {
            return;
        };
        let text = "Why deny? Reply to this message with the reason: the agent receives it word \
                    for word.";
        let mut extra = json!({"reply_markup": {"force_reply": true}});
        if let Some(id) = p.message_id {
            extra["reply_parameters"] =
                json!({"message_id": id, "allow_sending_without_reply": true});
        }
        match self.api.send_message(&self.chat, text, extra) {
            Ok(prompt) => {
                if let Some(p) = self.state.posted.get_mut(key) {
                    p.prompts.push(prompt);
                }
                self.save();
                self.notice(query_id, "Reply with the reason to deny.");
            }
            Err(e) => {
                self.notice(
                    query_id,
                    "Not done: Telegram did not take the question for a reason.",
                );
                self.error(format!("telegram: cannot ask for a reason for {key}: {e}"));
            }
        }
    }

    /// A reply to a post (or to its prompt for a reason): the answer, or the denial's reason.
    fn on_reply(&mut self, key: &str, reply_id: i64, from: &User, text: &str) {
        if !self.allowed.contains(&from.id) {
            log(&format!(
                "refused a reply by {} ({}) to {key}: not in [telegram] allowed_users",
                from.name(),
                from.id
            ));
            let said = format!(
                "Not counted: your id {} is not in luzia's allowed_users.",
                from.id
            );
            self.reply(reply_id, &said);
            return;
        }
        let Some(posted) = self.state.posted.get(key).cloned() else {
            return;
        };
        if let Some(c) = &posted.closed {
            let said = format!("Already settled: {}", c.outcome);
            self.reply(reply_id, &said);
            return;
        }
        let act = match posted.what {
            What::Question => Act::Answer(text),
            What::Gate => Act::Decide(Verdict::deny(text)),
        };
        let applied = self.target.apply(&posted, act, from);
        log(&format!(
            "{key}: reply by {} ({}): {applied:?}",
            from.name(),
            from.id
        ));
        match &applied {
            Applied::Done(_) => {}
            Applied::Already(w) => self.reply(reply_id, &format!("Already settled: {w}")),
            Applied::Refused(w) => self.reply(reply_id, &format!("Not an answer: {w}")),
            Applied::Failed(w) => self.reply(reply_id, &format!("Not done: {w}")),
        }
        self.settle(key, applied);
    }

    /// A post whose instance stands settled is closed with how.
    fn settle(&mut self, key: &str, applied: Applied) {
        match applied {
            Applied::Done(w) | Applied::Already(w) => self.close(key, w),
            Applied::Refused(_) => {}
            Applied::Failed(w) => self.error(format!("telegram: {key}: {w}")),
        }
    }

    /// The small notice a presser sees.
    fn notice(&mut self, query_id: &str, text: &str) {
        let text = ellipsize(&plain_text(text), NOTICE_CAP);
        if let Err(e) = self.api.answer_press(query_id, &text, true) {
            self.error(format!("telegram: cannot answer a press: {e}"));
        }
    }

    fn reply(&mut self, to: i64, text: &str) {
        let extra =
            json!({"reply_parameters": {"message_id": to, "allow_sending_without_reply": true}});
        if let Err(e) = self.api.send_message(&self.chat, text, extra) {
            self.error(format!("telegram: cannot reply: {e}"));
        }
    }
}

/// What a press of `action` on the open post `posted` gives: an answer or a verdict, `None` for
/// Deny (its reason is asked for), or why it gives nothing: a button this post never had (a
/// forged press, or one from an older message of another kind), which decides nothing.
fn act_of(posted: &Posted, action: Action) -> Result<Option<Act<'_>>, &'static str> {
    match (posted.what, action) {
        (What::Question, Action::Yes) => Ok(Some(Act::Answer("yes"))),
        (What::Question, Action::No) => Ok(Some(Act::Answer("no"))),
        (What::Question, Action::Option(i)) => match posted.options.get(i) {
            Some(o) => Ok(Some(Act::Answer(o))),
            None => Err("This button names no option."),
        },
        (What::Gate, Action::Approve) => Ok(Some(Act::Decide(Verdict::approve(Scope::Once, "")))),
        (What::Gate, Action::ApproveSession) if posted.session => {
            Ok(Some(Act::Decide(Verdict::approve(Scope::Session, ""))))
        }
        (What::Gate, Action::ApproveSession) => Err(
            "Not done: this gate does not offer approving for the session (its agent asks again \
             for each request). Approve approves this request once.",
        ),
        (What::Gate, Action::Deny) => Ok(None),
        (What::Question, Action::Approve | Action::ApproveSession | Action::Deny)
        | (What::Gate, Action::Yes | Action::No | Action::Option(_)) => {
            Err("This button is not one of this message's.")
        }
    }
}
