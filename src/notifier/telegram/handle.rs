//! One update acted on: a button pressed or a reply, from the configured chat and one of the
//! `allowed_users`, given to the instance its message was posted for (`answer`). A press from
//! anyone else decides nothing, is answered with a refusal and logged. A press on a post that
//! is closed, or that luzia no longer knows, decides nothing either: it is told how it ended.
//! The offset moves past the update, saved, once it is handled.

use serde_json::{Value, json};

use super::answer::{Act, Applied};
use super::format::User;
use super::state::What;
use super::updates::{self, Input, press_data};
use super::worker::{Worker, log};
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
        let post = press_data(data).and_then(|(serial, action)| {
            self.state
                .by_serial(serial)
                .map(|(k, p)| (k.clone(), p.clone(), action.to_owned()))
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
        let option;
        let act = match (posted.what, action.as_str()) {
            (What::Question, "y") => Act::Answer("yes"),
            (What::Question, "n") => Act::Answer("no"),
            (What::Question, o) => {
                let index = o.strip_prefix('o').and_then(|i| i.parse::<usize>().ok());
                match index.and_then(|i| posted.options.get(i)) {
                    Some(o) => {
                        option = o.clone();
                        Act::Answer(&option)
                    }
                    None => {
                        self.notice(query_id, "This button names no option.");
                        return;
                    }
                }
            }
            (What::Gate, "a") => Act::Decide {
                approved: true,
                reason: "",
            },
            (What::Gate, _) => {
                self.ask_reason(&key, query_id);
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
            What::Gate => Act::Decide {
                approved: false,
                reason: text,
            },
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
