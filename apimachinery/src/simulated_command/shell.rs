//! The part of `sh -c SCRIPT` this module follows: simple commands of plain, quoted and escaped
//! words with `$NAME`, `${NAME}`, `$?` and `$(...)` expansions, `>`/`>>` redirections and
//! `NAME=value` assignments, joined by `;`, `&&`, `||` or new lines, with comments. Expansions
//! happen when a command runs, as in a shell. Pipes, globs, subshells and control flow are
//! beyond it.

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

/// A part of a word, `quoted` when inside quotes (not split into fields).
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Var(String),
    /// `$?`.
    Status,
    /// `$(SCRIPT)`.
    Command(String),
}

type Word = Vec<(Piece, bool)>;

/// A simple command: its words and where its output goes.
#[derive(Debug, Default)]
struct Command {
    words: Vec<Word>,
    /// `> FILE` (false) or `>> FILE` (true).
    redirect: Option<(Word, bool)>,
}

/// Runs a script; `None` as soon as something is beyond this module.
pub(super) fn run_script(state: &mut State, text: &str) -> Option<()> {
    let commands = parse(text)?;
    let mut skip = false;
    for (command, sep) in commands {
        if !command.words.is_empty() && !skip {
            run_command(state, &command)?;
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

fn run_command(state: &mut State, command: &Command) -> Option<()> {
    let mut words = Vec::new();
    for w in &command.words {
        words.extend(expand(state, w)?);
    }
    // Leading `NAME=value` words assign; alone they set shell variables, before a command
    // they only reach that command's environment, which no command here reads.
    let assignments = words.iter().take_while(|w| assignment(w).is_some()).count();
    if assignments == words.len() {
        for w in &words {
            let (name, value) = assignment(w)?;
            state.set_var(name, value);
        }
        state.status = 0;
        return Some(());
    }
    let words = &words[assignments..];
    let Some((target, append)) = &command.redirect else {
        return state.run(words);
    };
    let path = expand(state, target)?.join(" ");
    state.run_redirected(words, &path, *append)
}

/// `NAME=value` as its parts.
fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    valid.then_some((name, value))
}

/// A word's fields after expansion: unquoted expansions split at blanks, and a word that
/// expands to nothing unquoted is no field at all.
fn expand(state: &mut State, word: &Word) -> Option<Vec<String>> {
    let mut fields: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for (piece, quoted) in word {
        let value = match piece {
            Piece::Text(t) => t.clone(),
            Piece::Var(name) => state.var(name).unwrap_or_default(),
            Piece::Status => state.status.to_string(),
            Piece::Command(script) => state.substitute(script)?,
        };
        if *quoted || matches!(piece, Piece::Text(_)) {
            current.get_or_insert_with(String::new).push_str(&value);
            continue;
        }
        let mut parts = value.split_whitespace().peekable();
        if value.starts_with(char::is_whitespace)
            && let Some(c) = current.take()
        {
            fields.push(c);
        }
        while let Some(p) = parts.next() {
            current.get_or_insert_with(String::new).push_str(p);
            if parts.peek().is_some() {
                fields.extend(current.take());
            }
        }
        if value.ends_with(char::is_whitespace) {
            fields.extend(current.take());
        }
    }
    fields.extend(current);
    Some(fields)
}

/// The words being read into a command.
#[derive(Default)]
struct Reader {
    command: Command,
    word: Option<Word>,
    /// The word being read is a redirection's target.
    redirect: Option<bool>,
}

impl Reader {
    fn push(&mut self, piece: Piece, quoted: bool) {
        let word = self.word.get_or_insert_with(Vec::new);
        match (word.last_mut(), &piece) {
            (Some((Piece::Text(t), q)), Piece::Text(more)) if *q == quoted => t.push_str(more),
            _ => word.push((piece, quoted)),
        }
    }
    fn text(&mut self, c: char, quoted: bool) {
        self.push(Piece::Text(c.to_string()), quoted);
    }
    /// Ends the word being read; `None` when a redirection has no target.
    fn end_word(&mut self) {
        let Some(word) = self.word.take() else {
            return;
        };
        match self.redirect.take() {
            Some(append) => self.command.redirect = Some((word, append)),
            None => self.command.words.push(word),
        }
    }
    fn end_command(&mut self) -> Option<Command> {
        self.end_word();
        if self.redirect.is_some() {
            return None;
        }
        Some(std::mem::take(&mut self.command))
    }
}

/// Reads `$NAME`, `${NAME}`, `$?` or `$(...)` after a `$`; `None` for anything else.
fn dollar(chars: &mut std::iter::Peekable<std::str::Chars>) -> Option<Piece> {
    match chars.peek()? {
        '?' => {
            chars.next();
            return Some(Piece::Status);
        }
        '(' => {
            chars.next();
            if chars.peek() == Some(&'(') {
                return None; // arithmetic
            }
            let mut depth = 1;
            let mut script = String::new();
            for c in chars.by_ref() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(Piece::Command(script));
                        }
                    }
                    _ => {}
                }
                script.push(c);
            }
            return None;
        }
        _ => {}
    }
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
    (!name.is_empty()).then_some(Piece::Var(name))
}

/// The script's commands, each with the separator after it; `None` for anything beyond this
/// module.
fn parse(text: &str) -> Option<Vec<(Command, Sep)>> {
    let mut commands = Vec::new();
    let mut r = Reader::default();
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\'' => {
                r.push(Piece::Text(String::new()), true);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => r.text(c, true),
                    }
                }
            }
            '"' => {
                r.push(Piece::Text(String::new()), true);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' => r.push(dollar(&mut chars)?, true),
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => r.text(c, true),
                            '\n' => {}
                            c => {
                                r.text('\\', true);
                                r.text(c, true);
                            }
                        },
                        '`' => return None,
                        c => r.text(c, true),
                    }
                }
            }
            '\\' => match chars.next()? {
                '\n' => {}
                c => r.text(c, true),
            },
            '$' => r.push(dollar(&mut chars)?, false),
            '>' => {
                // `2>&1` changes nothing: both streams reach the log.
                if r.word == Some(vec![(Piece::Text("2".into()), false)]) {
                    if chars.next()? != '&' || chars.next()? != '1' {
                        return None;
                    }
                    r.word = None;
                    continue;
                }
                r.end_word();
                let append = chars.peek() == Some(&'>');
                if append {
                    chars.next();
                }
                if chars.peek() == Some(&'&') || r.redirect.is_some() {
                    return None;
                }
                r.redirect = Some(append);
            }
            ';' | '\n' => commands.push((r.end_command()?, Sep::Then)),
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                commands.push((r.end_command()?, Sep::And));
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                commands.push((r.end_command()?, Sep::Or));
            }
            c if c.is_whitespace() => r.end_word(),
            '#' if r.word.is_none() => {
                // A comment runs to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                commands.push((r.end_command()?, Sep::Then));
            }
            '|' | '&' | '<' | '`' | '(' | ')' | '{' | '}' | '*' | '?' => return None,
            c => r.text(c, false),
        }
    }
    commands.push((r.end_command()?, Sep::Then));
    // Shell keywords start control flow, which is not followed.
    let keyword = |w: &Word| {
        matches!(
            w.as_slice(),
            [(Piece::Text(t), false)] if matches!(
                t.as_str(),
                "if" | "then" | "else" | "elif" | "fi" | "for" | "while" | "until" | "do"
                    | "done" | "case" | "esac" | "function" | "export" | "set" | "trap"
                    | "read" | "local" | "unset" | "shift" | "eval" | "source" | "."
            )
        )
    };
    if commands
        .iter()
        .any(|(c, _)| c.words.first().is_some_and(keyword))
    {
        return None;
    }
    Some(commands)
}
