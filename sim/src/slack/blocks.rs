//! Block Kit validation with Slack's answers: `invalid_blocks_format` when `blocks` is not a JSON
//! array of objects, `invalid_blocks` (with `errors` naming the JSON pointer, as Slack does) when a
//! documented limit is broken, `msg_blocks_too_long` when the text of all blocks together passes
//! about 13,200 characters (slackapi/bolt-js#2509), `msg_too_long` for text over 40,000.
//!
//! Lengths are counted in UTF-16 code units, which is never less than what Slack counts, so the
//! simulator is at least as strict as Slack.

use std::collections::HashSet;

use serde_json::Value;

/// Documented limits (docs.slack.dev Block Kit reference).
pub const MAX_BLOCKS: usize = 50;
pub const MAX_SECTION_TEXT: usize = 3000;
pub const MAX_FIELDS: usize = 10;
pub const MAX_FIELD_TEXT: usize = 2000;
pub const MAX_HEADER_TEXT: usize = 150;
pub const MAX_BUTTON_TEXT: usize = 75;
pub const MAX_BUTTON_VALUE: usize = 2000;
pub const MAX_ID: usize = 255;
pub const MAX_URL: usize = 3000;
pub const MAX_ACTIONS_ELEMENTS: usize = 25;
pub const MAX_CONTEXT_ELEMENTS: usize = 10;
pub const MAX_CONFIRM_TITLE: usize = 100;
pub const MAX_CONFIRM_TEXT: usize = 300;
pub const MAX_CONFIRM_BUTTON: usize = 30;
/// The message `text`.
pub const MAX_TEXT: usize = 40_000;
/// All text in all blocks together: where `msg_blocks_too_long` was observed.
pub const MAX_BLOCKS_TEXT: usize = 13_200;

/// A refusal: Slack's error code and the messages it lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub error: &'static str,
    pub messages: Vec<String>,
}

fn units(s: &str) -> usize {
    s.encode_utf16().count()
}

struct Checker {
    errors: Vec<String>,
    text_total: usize,
}

impl Checker {
    fn too_long(&mut self, pointer: &str, n: usize, max: usize) {
        if n > max {
            self.errors.push(format!("must be less than {} characters [json-pointer:{pointer}]", max + 1));
        }
    }

    /// A text object: `{"type": "plain_text"|"mrkdwn", "text": ...}`.
    fn text_object(&mut self, v: Option<&Value>, pointer: &str, max: usize, plain_only: bool) {
        let Some(v) = v else {
            self.errors.push(format!("missing required field: text [json-pointer:{pointer}]"));
            return;
        };
        let kind = v.get("type").and_then(Value::as_str);
        match kind {
            Some("plain_text") => {}
            Some("mrkdwn") if !plain_only => {}
            _ => self
                .errors
                .push(format!("must be a {} text object [json-pointer:{pointer}/type]", if plain_only { "plain_text" } else { "valid" })),
        }
        match v.get("text").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => {
                self.text_total += units(t);
                self.too_long(&format!("{pointer}/text"), units(t), max);
            }
            _ => self.errors.push(format!("must be more than 0 characters [json-pointer:{pointer}/text]")),
        }
    }

    fn id(&mut self, v: Option<&Value>, pointer: &str) {
        if let Some(id) = v.and_then(Value::as_str) {
            self.too_long(pointer, units(id), MAX_ID);
        }
    }

    fn element(&mut self, e: &Value, pointer: &str) {
        match e.get("type").and_then(Value::as_str) {
            Some("button") => {
                self.text_object(e.get("text"), &format!("{pointer}/text"), MAX_BUTTON_TEXT, true);
                self.id(e.get("action_id"), &format!("{pointer}/action_id"));
                if let Some(value) = e.get("value").and_then(Value::as_str) {
                    self.too_long(&format!("{pointer}/value"), units(value), MAX_BUTTON_VALUE);
                }
                if let Some(url) = e.get("url").and_then(Value::as_str) {
                    self.too_long(&format!("{pointer}/url"), units(url), MAX_URL);
                }
                if let Some(style) = e.get("style").and_then(Value::as_str)
                    && style != "primary"
                    && style != "danger"
                {
                    self.errors.push(format!("must be one of primary, danger [json-pointer:{pointer}/style]"));
                }
                if let Some(confirm) = e.get("confirm") {
                    let at = format!("{pointer}/confirm");
                    self.text_object(confirm.get("title"), &format!("{at}/title"), MAX_CONFIRM_TITLE, true);
                    self.text_object(confirm.get("text"), &format!("{at}/text"), MAX_CONFIRM_TEXT, false);
                    self.text_object(confirm.get("confirm"), &format!("{at}/confirm"), MAX_CONFIRM_BUTTON, true);
                    self.text_object(confirm.get("deny"), &format!("{at}/deny"), MAX_CONFIRM_BUTTON, true);
                }
            }
            other => self.errors.push(format!("unsupported element type {other:?} [json-pointer:{pointer}/type]")),
        }
    }

    fn block(&mut self, b: &Value, i: usize, block_ids: &mut HashSet<String>) {
        let pointer = format!("/blocks/{i}");
        if !b.is_object() {
            self.errors.push(format!("must be an object [json-pointer:{pointer}]"));
            return;
        }
        if let Some(id) = b.get("block_id").and_then(Value::as_str) {
            self.id(Some(&Value::from(id)), &format!("{pointer}/block_id"));
            if !block_ids.insert(id.to_owned()) {
                self.errors.push(format!("duplicate block_id `{id}` [json-pointer:{pointer}/block_id]"));
            }
        }
        match b.get("type").and_then(Value::as_str) {
            Some("header") => self.text_object(b.get("text"), &format!("{pointer}/text"), MAX_HEADER_TEXT, true),
            Some("section") => {
                let fields = b.get("fields").and_then(Value::as_array);
                if b.get("text").is_none() && fields.is_none() {
                    self.errors.push(format!("must provide either text or fields [json-pointer:{pointer}]"));
                }
                if b.get("text").is_some() {
                    self.text_object(b.get("text"), &format!("{pointer}/text"), MAX_SECTION_TEXT, false);
                }
                if let Some(fields) = fields {
                    if fields.len() > MAX_FIELDS {
                        self.errors.push(format!("no more than {MAX_FIELDS} items allowed [json-pointer:{pointer}/fields]"));
                    }
                    for (j, f) in fields.iter().enumerate() {
                        self.text_object(Some(f), &format!("{pointer}/fields/{j}"), MAX_FIELD_TEXT, false);
                    }
                }
                if let Some(accessory) = b.get("accessory") {
                    self.element(accessory, &format!("{pointer}/accessory"));
                }
            }
            Some("actions") => {
                let elements = b.get("elements").and_then(Value::as_array).cloned().unwrap_or_default();
                if elements.is_empty() {
                    self.errors.push(format!("must provide at least 1 item [json-pointer:{pointer}/elements]"));
                }
                if elements.len() > MAX_ACTIONS_ELEMENTS {
                    self.errors.push(format!("no more than {MAX_ACTIONS_ELEMENTS} items allowed [json-pointer:{pointer}/elements]"));
                }
                let mut action_ids = HashSet::new();
                for (j, e) in elements.iter().enumerate() {
                    self.element(e, &format!("{pointer}/elements/{j}"));
                    if let Some(id) = e.get("action_id").and_then(Value::as_str)
                        && !action_ids.insert(id.to_owned())
                    {
                        self.errors.push(format!("duplicate action_id `{id}` [json-pointer:{pointer}/elements/{j}/action_id]"));
                    }
                }
            }
            Some("context") => {
                let elements = b.get("elements").and_then(Value::as_array).cloned().unwrap_or_default();
                if elements.is_empty() || elements.len() > MAX_CONTEXT_ELEMENTS {
                    self.errors.push(format!("must have between 1 and {MAX_CONTEXT_ELEMENTS} items [json-pointer:{pointer}/elements]"));
                }
                for (j, e) in elements.iter().enumerate() {
                    if e.get("type").and_then(Value::as_str) != Some("image") {
                        self.text_object(Some(e), &format!("{pointer}/elements/{j}"), MAX_SECTION_TEXT, false);
                    }
                }
            }
            Some("divider") => {}
            other => self.errors.push(format!("unsupported block type {other:?} [json-pointer:{pointer}/type]")),
        }
    }
}

/// Checks a message's `text` and `blocks` (already parsed; `None` when absent).
pub fn check(text: Option<&str>, blocks: Option<&Value>) -> Result<(), Refusal> {
    if let Some(text) = text
        && units(text) > MAX_TEXT
    {
        return Err(Refusal { error: "msg_too_long", messages: vec![] });
    }
    let Some(blocks) = blocks else { return Ok(()) };
    let Some(list) = blocks.as_array() else {
        return Err(Refusal { error: "invalid_blocks_format", messages: vec!["must be an array [json-pointer:/blocks]".into()] });
    };
    if list.iter().any(|b| !b.is_object()) {
        return Err(Refusal {
            error: "invalid_blocks_format",
            messages: vec!["every block must be an object [json-pointer:/blocks]".into()],
        });
    }
    let mut checker = Checker { errors: Vec::new(), text_total: 0 };
    if list.len() > MAX_BLOCKS {
        checker.errors.push(format!("no more than {MAX_BLOCKS} items allowed [json-pointer:/blocks]"));
    }
    let mut block_ids = HashSet::new();
    for (i, b) in list.iter().enumerate() {
        checker.block(b, i, &mut block_ids);
    }
    if !checker.errors.is_empty() {
        return Err(Refusal { error: "invalid_blocks", messages: checker.errors });
    }
    if checker.text_total > MAX_BLOCKS_TEXT {
        return Err(Refusal { error: "msg_blocks_too_long", messages: vec![] });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn section(n: usize) -> Value {
        json!({"type": "section", "text": {"type": "mrkdwn", "text": "x".repeat(n)}})
    }

    #[test]
    fn each_documented_limit_is_refused_with_slacks_error_and_pointer() {
        assert!(check(Some("hi"), Some(&json!([section(3000)]))).is_ok());
        let r = check(None, Some(&json!([section(10), section(3001)]))).unwrap_err();
        assert_eq!(r.error, "invalid_blocks");
        assert_eq!(r.messages, vec!["must be less than 3001 characters [json-pointer:/blocks/1/text/text]"]);
        let header = json!([{"type": "header", "text": {"type": "plain_text", "text": "h".repeat(151)}}]);
        assert!(check(None, Some(&header)).unwrap_err().messages[0].contains("151"));
        let mrkdwn_header = json!([{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}]);
        assert_eq!(check(None, Some(&mrkdwn_header)).unwrap_err().error, "invalid_blocks");
        let button = |text: &str, value: &str| json!([{"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": "a", "value": value}]}]);
        assert!(check(None, Some(&button(&"b".repeat(76), "v"))).is_err());
        assert!(check(None, Some(&button("b", &"v".repeat(2001)))).is_err());
        assert!(check(None, Some(&button("b", &"v".repeat(2000)))).is_ok());
        let many: Vec<Value> = (0..51).map(|_| section(1)).collect();
        assert_eq!(
            check(None, Some(&Value::Array(many))).unwrap_err().messages,
            vec!["no more than 50 items allowed [json-pointer:/blocks]"]
        );
        let fields: Vec<Value> = (0..11).map(|_| json!({"type": "mrkdwn", "text": "f"})).collect();
        assert!(check(None, Some(&json!([{"type": "section", "fields": fields}]))).is_err());
    }

    #[test]
    fn formats_totals_and_text_have_their_own_errors() {
        assert_eq!(check(None, Some(&json!("[]"))).unwrap_err().error, "invalid_blocks_format");
        assert_eq!(check(None, Some(&json!([1]))).unwrap_err().error, "invalid_blocks_format");
        let big: Vec<Value> = (0..5).map(|_| section(2900)).collect();
        assert_eq!(check(None, Some(&Value::Array(big))).unwrap_err().error, "msg_blocks_too_long");
        assert_eq!(check(Some(&"t".repeat(40_001)), None).unwrap_err().error, "msg_too_long");
        let dup = json!([{"type": "divider", "block_id": "x"}, {"type": "divider", "block_id": "x"}]);
        assert!(check(None, Some(&dup)).unwrap_err().messages[0].contains("duplicate block_id"));
    }
}
