//! Kubernetes label selectors (`k8s.io/apimachinery/pkg/labels.Parse`), as List's `selector`.
//!
//! Equality-based (`k=v`, `k==v`, `k!=v`), existence (`k`, `!k`), set-based (`k in (a,b)`,
//! `k notin (a,b)`) and numeric (`k>1`, `k<1`) requirements, joined by commas (logical and). Error texts follow the
//! apimachinery parser's `found '<token>', expected: ...` form; Argo CD prefixes them with
//! `error parsing the selector: `.

use std::collections::BTreeSet;

use serde_json::Value;

/// A parsed selector: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Equals(String),
    NotEquals(String),
    In(BTreeSet<String>),
    NotIn(BTreeSet<String>),
    Exists,
    DoesNotExist,
    GreaterThan(i64),
    LessThan(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Identifier(String),
    Bang,
    NotEquals,
    Equals,
    DoubleEquals,
    Open,
    Close,
    Comma,
    In,
    NotIn,
    Gt,
    Lt,
    End,
}

impl Token {
    fn literal(&self) -> String {
        match self {
            Token::Identifier(s) => s.clone(),
            Token::Bang => "!".into(),
            Token::NotEquals => "!=".into(),
            Token::Equals => "=".into(),
            Token::DoubleEquals => "==".into(),
            Token::Open => "(".into(),
            Token::Close => ")".into(),
            Token::Comma => ",".into(),
            Token::In => "in".into(),
            Token::NotIn => "notin".into(),
            Token::Gt => ">".into(),
            Token::Lt => "<".into(),
            Token::End => String::new(),
        }
    }
}

fn tokenize(input: &str) -> Vec<Token> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let special = |c: char| matches!(c, '!' | '=' | '(' | ')' | ',' | '<' | '>');
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        let (token, width) = match (c, next) {
            ('!', Some('=')) => (Token::NotEquals, 2),
            ('!', _) => (Token::Bang, 1),
            ('=', Some('=')) => (Token::DoubleEquals, 2),
            ('=', _) => (Token::Equals, 1),
            ('(', _) => (Token::Open, 1),
            (')', _) => (Token::Close, 1),
            (',', _) => (Token::Comma, 1),
            ('>', _) => (Token::Gt, 1),
            ('<', _) => (Token::Lt, 1),
            _ => {
                let start = i;
                let mut end = i;
                while end < chars.len() && !chars[end].is_whitespace() && !special(chars[end]) {
                    end += 1;
                }
                let word: String = chars[start..end].iter().collect();
                let token = match word.as_str() {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    _ => Token::Identifier(word),
                };
                (token, end - start)
            }
        };
        tokens.push(token);
        i += width;
    }
    tokens.push(Token::End);
    tokens
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        self.tokens.get(self.pos).unwrap_or(&Token::End)
    }

    fn next(&mut self) -> Token {
        let token = self.peek().clone();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        token
    }
}

fn found(token: &Token, expected: &str) -> String {
    format!("found '{}', expected: {expected}", token.literal())
}

/// Parses a selector; the error is the text after `error parsing the selector: `.
pub(crate) fn parse(input: &str) -> Result<Selector, String> {
    let mut parser = Parser { tokens: tokenize(input), pos: 0 };
    let mut requirements = Vec::new();
    loop {
        match parser.peek() {
            Token::End => break,
            Token::Identifier(_) | Token::Bang => {
                requirements.push(parse_requirement(&mut parser)?);
                match parser.next() {
                    Token::End => break,
                    Token::Comma => match parser.peek() {
                        Token::Identifier(_) | Token::Bang => {}
                        other => return Err(found(other, "identifier after ','")),
                    },
                    other => return Err(found(&other, "',' or 'end of string'")),
                }
            }
            other => return Err(found(other, "!, identifier, or 'end of string'")),
        }
    }
    Ok(Selector { requirements })
}

fn parse_requirement(parser: &mut Parser) -> Result<Requirement, String> {
    let mut token = parser.next();
    let negated = token == Token::Bang;
    if negated {
        token = parser.next();
    }
    let Token::Identifier(key) = token else {
        return Err(found(&token, "identifier"));
    };
    validate_key(&key)?;
    if negated {
        return Ok(Requirement { key, op: Op::DoesNotExist });
    }
    if matches!(parser.peek(), Token::End | Token::Comma) {
        return Ok(Requirement { key, op: Op::Exists });
    }
    let op = match parser.next() {
        Token::Equals | Token::DoubleEquals => Op::Equals(parse_exact_value(parser)?),
        Token::NotEquals => Op::NotEquals(parse_exact_value(parser)?),
        Token::In => Op::In(parse_values(parser)?),
        Token::NotIn => Op::NotIn(parse_values(parser)?),
        token @ (Token::Gt | Token::Lt) => {
            let value = parse_exact_value(parser)?;
            let bound: i64 = value.parse().map_err(|_| "for 'Gt', 'Lt' operators, the value must be an integer".to_string())?;
            if token == Token::Gt { Op::GreaterThan(bound) } else { Op::LessThan(bound) }
        }
        other => return Err(found(&other, "in, notin, =, ==, !=, gt, lt")),
    };
    Ok(Requirement { key, op })
}

fn parse_exact_value(parser: &mut Parser) -> Result<String, String> {
    if matches!(parser.peek(), Token::End | Token::Comma) {
        return Ok(String::new());
    }
    match parser.next() {
        Token::Identifier(value) => {
            validate_value(&value)?;
            Ok(value)
        }
        // `in`/`notin` are keywords to the lexer but fine as values.
        Token::In => Ok("in".into()),
        Token::NotIn => Ok("notin".into()),
        other => Err(found(&other, "identifier")),
    }
}

fn parse_values(parser: &mut Parser) -> Result<BTreeSet<String>, String> {
    let open = parser.next();
    if open != Token::Open {
        return Err(found(&open, "'('"));
    }
    let mut values = BTreeSet::new();
    loop {
        match parser.next() {
            Token::Identifier(value) => {
                validate_value(&value)?;
                values.insert(value);
            }
            Token::Close if values.is_empty() => {
                values.insert(String::new());
                return Ok(values);
            }
            other => return Err(found(&other, "',', ')' or identifier")),
        }
        match parser.next() {
            Token::Comma => continue,
            Token::Close => return Ok(values),
            other => return Err(found(&other, "',' or ')'")),
        }
    }
}

fn is_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.')
                .all(|label| !label.is_empty() && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
    });
    if prefix_ok && is_name_part(name) {
        Ok(())
    } else {
        Err(format!(
            "key: Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn validate_value(value: &str) -> Result<(), String> {
    if value.is_empty() || is_name_part(value) {
        Ok(())
    } else {
        Err(format!(
            "values[0][{value}]: Invalid value: \"{value}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

impl Selector {
    /// Whether an app's `metadata.labels` satisfy every requirement.
    pub(crate) fn matches(&self, labels: Option<&Value>) -> bool {
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match &r.op {
            Op::Equals(v) => get(&r.key) == Some(v.as_str()),
            Op::NotEquals(v) => get(&r.key) != Some(v.as_str()),
            Op::In(set) => get(&r.key).is_some_and(|v| set.contains(v)),
            Op::NotIn(set) => get(&r.key).is_none_or(|v| !set.contains(v)),
            Op::Exists => get(&r.key).is_some(),
            Op::DoesNotExist => get(&r.key).is_none(),
            Op::GreaterThan(bound) => get(&r.key).and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > *bound),
            Op::LessThan(bound) => get(&r.key).and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < *bound),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matches(selector: &str, labels: Value) -> bool {
        parse(selector).expect("valid selector").matches(Some(&labels))
    }

    #[test]
    fn equality_existence_and_set_requirements_match_labels() {
        let labels = json!({"env": "prod", "team": "a"});
        assert!(matches("", labels.clone()));
        assert!(matches("env=prod", labels.clone()));
        assert!(matches("env==prod,team", labels.clone()));
        assert!(!matches("env!=prod", labels.clone()));
        assert!(matches("env!=staging", labels.clone()));
        assert!(matches("!tier", labels.clone()));
        assert!(!matches("!team", labels.clone()));
        assert!(matches("team in (a, b)", labels.clone()));
        assert!(!matches("team notin (a,b)", labels.clone()));
        assert!(matches(" env = prod , team ", labels));
        assert!(matches("tier>2", json!({"tier": "3"})));
        assert!(!matches("tier<2", json!({"tier": "3"})));
    }

    #[test]
    fn malformed_selectors_are_rejected_with_parser_messages() {
        assert_eq!(parse("env=prod=x").unwrap_err(), "found '=', expected: ',' or 'end of string'");
        assert_eq!(parse("=prod").unwrap_err(), "found '=', expected: !, identifier, or 'end of string'");
        assert_eq!(parse("env=prod,").unwrap_err(), "found '', expected: identifier after ','");
        assert!(parse("env in a").is_err());
        assert!(parse("bad key!=x").is_err());
        assert!(parse("env=-x").is_err());
    }
}
