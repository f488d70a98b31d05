//! Telegram's updates read into what the bridge acts on: a button pressed (`callback_query`)
//! or a message replying to one of the bridge's (`message.reply_to_message`). Everything else
//! (a message that replies to nothing, a sticker, an edit) is nothing to act on.

use serde_json::Value;

use super::format::User;

/// What one update asks.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    Press {
        query_id: String,
        from: User,
        /// The chat the pressed message is in.
        chat: Chat,
        data: String,
    },
    Reply {
        /// The reply's own message.
        id: i64,
        from: User,
        chat: Chat,
        /// The message replied to.
        to: i64,
        text: String,
    },
    Other,
}

/// A chat as an update names it: its id, and its @name for a public one.
#[derive(Debug, PartialEq, Eq)]
pub struct Chat {
    pub id: i64,
    pub username: Option<String>,
}

impl Chat {
    /// Whether this is the chat `[telegram] chat_id` names (`123`, `-100…` or `@name`).
    pub fn is(&self, chat_id: &str) -> bool {
        match chat_id.strip_prefix('@') {
            Some(name) => self
                .username
                .as_deref()
                .is_some_and(|u| u.eq_ignore_ascii_case(name)),
            None => chat_id.parse::<i64>() == Ok(self.id),
        }
    }
}

fn user(v: &Value) -> Option<User> {
    Some(User {
        id: v["id"].as_i64()?,
        username: v["username"].as_str().map(str::to_owned),
        first_name: v["first_name"].as_str().unwrap_or_default().to_owned(),
    })
}

fn chat(v: &Value) -> Option<Chat> {
    Some(Chat {
        id: v["id"].as_i64()?,
        username: v["username"].as_str().map(str::to_owned),
    })
}

/// The update's id (the offset moves past it once it is handled).
pub fn update_id(update: &Value) -> Option<i64> {
    update["update_id"].as_i64()
}

pub fn read(update: &Value) -> Input {
    read_some(update).unwrap_or(Input::Other)
}

fn read_some(update: &Value) -> Option<Input> {
    if let Some(q) = update.get("callback_query") {
        return Some(Input::Press {
            query_id: q["id"].as_str()?.to_owned(),
            from: user(&q["from"])?,
            chat: chat(&q["message"]["chat"])?,
            data: q["data"].as_str()?.to_owned(),
        });
    }
    let m = update.get("message")?;
    Some(Input::Reply {
        id: m["message_id"].as_i64()?,
        from: user(&m["from"])?,
        chat: chat(&m["chat"])?,
        to: m["reply_to_message"]["message_id"].as_i64()?,
        text: m["text"].as_str()?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn presses_and_replies_are_read_and_the_rest_is_other() {
        let press = json!({"update_id": 5, "callback_query": {"id": "cq1",
            "from": {"id": 111, "username": "bruno", "first_name": "Bruno"},
            "message": {"message_id": 9, "chat": {"id": 42}}, "data": "7:o1"}});
        let Input::Press {
            query_id,
            from,
            chat,
            data,
        } = read(&press)
        else {
            panic!("not a press");
        };
        assert_eq!(
            (query_id.as_str(), from.id, data.as_str()),
            ("cq1", 111, "7:o1")
        );
        assert!(chat.is("42") && !chat.is("43") && !chat.is("@x"));
        let reply = json!({"update_id": 6, "message": {"message_id": 10,
            "from": {"id": 222, "first_name": "Ana"}, "chat": {"id": -100, "username": "ops"},
            "reply_to_message": {"message_id": 9}, "text": "  keep  spaces\n"}});
        match read(&reply) {
            Input::Reply { to, text, chat, .. } => {
                assert_eq!((to, text.as_str()), (9, "  keep  spaces\n"));
                assert!(chat.is("@OPS") && chat.is("-100"));
            }
            other => panic!("{other:?}"),
        }
        let plain = json!({"update_id": 7, "message": {"message_id": 11,
            "from": {"id": 222}, "chat": {"id": 1}, "text": "hi"}});
        assert_eq!(read(&plain), Input::Other);
    }
}
