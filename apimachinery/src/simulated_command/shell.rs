//! The part of `sh -c SCRIPT` this module follows: simple commands of plain or quoted words and
//! `$NAME` / `${NAME}` references to the environment, joined by `;`, `&&`, `||` or new lines,
//! with comments. Pipes, redirections, substitutions, globs and control flow are beyond it.

use super::State;

/// A separator after a command of a script.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sep {
    /// `;` or a new line: the next command runs whatever this one returned.
    Then,
    /// `&&`: the next command runs only if this one succeeded.
    And,
    /// `||`: the next command runs only if this one failed.
    Or,
}

/// Runs a script; `None` as soon as something is beyond this module.
pub(super) fn run_script(state: &mut State, text: &str) -> Option<()> {
    let env = state.sandbox.env();
    let lookup = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let commands = split(text, &lookup)?;
    let mut skip = false;
    for (words, sep) in commands {
        if !words.is_empty() && !skip {
            state.run(&words)?;
            if state.exited {
                break;
            }
        }
        // After `a && b` where a failed (or `a || b` where a succeeded), `b` does not run and the
        // status stays a's.
        skip = match sep {
            Sep::Then => false,
            Sep::And => state.status != 0,
            Sep::Or => state.status == 0,
        };
    }
    Some(())
}

/// A word being read: its text, and whether it exists yet (`""` is a word, nothing is not).
#[derive(Default)]
struct Words {
    done: Vec<String>,
    word: Option<String>,
}

impl Words {
    fn push(&mut self, c: char) {
        self.word.get_or_insert_with(String::new).push(c);
    }
    fn push_str(&mut self, s: &str) {
        self.word.get_or_insert_with(String::new).push_str(s);
    }
    fn end(&mut self) {
        if let Some(w) = self.word.take() {
            self.done.push(w);
        }
    }
    /// An unquoted expansion: its value is split into words at blanks.
    fn push_fields(&mut self, value: &str) {
        let starts_blank = value.starts_with(char::is_whitespace);
        let ends_blank = value.ends_with(char::is_whitespace);
        let mut fields = value.split_whitespace().peekable();
        if starts_blank {
            self.end();
        }
        while let Some(f) = fields.next() {
            self.push_str(f);
            if fields.peek().is_some() {
                self.end();
            }
        }
        if ends_blank {
            self.end();
        }
    }
    fn command(&mut self) -> Vec<String> {
        self.end();
        std::mem::take(&mut self.done)
    }
}

/// Reads `$NAME` or `${NAME}` after a `$`; `None` for anything else (`$?`, `$(...)`, `$1`).
fn variable(chars: &mut std::iter::Peekable<std::str::Chars>) -> Option<String> {
    let braced = chars.peek() == Some(&'{');
    if braced {
        chars.next();
    }
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        if c == '_' || c.is_ascii_alphanumeric() {
            if name.is_empty() && c.is_ascii_digit() {
                return None;
            }
            name.push(c);
            chars.next();
        } else {
            break;
        }
    }
    if braced && chars.next()? != '}' {
        return None;
    }
    (!name.is_empty()).then_some(name)
}

/// The script's commands as words (quotes removed, variables expanded), each with the separator
/// after it. `None` for anything beyond plain words, quotes, variables, separators and comments.
fn split(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<Vec<(Vec<String>, Sep)>> {
    let mut commands = Vec::new();
    let mut words = Words::default();
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\'' => {
                words.push_str("");
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => words.push(c),
                    }
                }
            }
            '"' => {
                words.push_str("");
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' => {
                            let name = variable(&mut chars)?;
                            words.push_str(&env(&name).unwrap_or_default());
                        }
                        '`' | '\\' => return None,
                        c => words.push(c),
                    }
                }
            }
            '$' => {
                let name = variable(&mut chars)?;
                words.push_fields(&env(&name).unwrap_or_default());
            }
            ';' | '\n' => commands.push((words.command(), Sep::Then)),
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                commands.push((words.command(), Sep::And));
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                commands.push((words.command(), Sep::Or));
            }
            c if c.is_whitespace() => words.end(),
            '#' if words.word.is_none() => {
                // A comment runs to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                commands.push((words.command(), Sep::Then));
            }
            '|' | '&' | '<' | '>' | '`' | '\\' | '(' | ')' | '{' | '}' | '*' | '?' | '[' | ']' => {
                return None;
            }
            c => words.push(c),
        }
    }
    commands.push((words.command(), Sep::Then));
    // Shell keywords start control flow, and `NAME=value` sets a variable: neither is followed.
    let beyond = |w: &str| {
        matches!(
            w,
            "if" | "then"
                | "else"
                | "elif"
                | "fi"
                | "for"
                | "while"
                | "until"
                | "do"
                | "done"
                | "case"
                | "esac"
                | "function"
                | "export"
                | "set"
                | "trap"
                | "read"
        ) || w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        })
    };
    if commands
        .iter()
        .any(|(w, _)| w.first().is_some_and(|w| beyond(w)))
    {
        return None;
    }
    Some(commands)
}
