//! What a simulated container's command would do, when it is simple enough to know without
//! running it: `exit N`, `sleep N`, `true`, `false`, `echo ...`, `date` (`printf`, `:`),
//! directly or in an `sh -c` script of such commands joined by `;`, `&&` or new lines. So
//! `kubectl create job hello --image=busybox -- echo hi` completes and logs `hi`, and
//! `sh -c "exit 1"` fails, as on a real node. Anything else (an image's own entrypoint, a loop, a
//! pipe, a program) runs until it is stopped; the simulated node's `sim.k1s.io/run-seconds` and
//! `exit-code` annotations override both. The simulated node and the log endpoint share it.

/// How a known command ends: after `seconds`, with `code`, having written `output`.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub seconds: f64,
    pub code: i32,
    pub output: Vec<Output>,
}

/// One line the command writes, `after_seconds` into its run.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub after_seconds: f64,
    pub line: Line,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Text(String),
    /// `date`: the time it ran, in busybox's format.
    Date,
}

/// The outcome of a container's command and args (in that order), `None` when it cannot be told.
pub fn outcome<'a>(argv: impl IntoIterator<Item = &'a str>) -> Option<Outcome> {
    let argv: Vec<&str> = argv.into_iter().collect();
    let (program, rest) = argv.split_first()?;
    if is_shell(program) {
        // `sh -c SCRIPT [NAME ARGS...]`: only the script matters here.
        let at = rest.iter().position(|a| *a == "-c")?;
        return script(rest.get(at + 1)?);
    }
    let mut state = State::default();
    state.run(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    Some(state.finish())
}

fn base(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_shell(program: &str) -> bool {
    matches!(base(program), "sh" | "bash" | "ash" | "dash")
}

#[derive(Default)]
struct State {
    seconds: f64,
    status: i32,
    /// `exit` ran: nothing after it does.
    exited: bool,
    output: Vec<Output>,
}

impl State {
    /// Runs one simple command; `None` when it is not one this module knows.
    fn run(&mut self, words: &[String]) -> Option<()> {
        let (name, args) = words.split_first()?;
        match base(name) {
            "exit" => {
                self.status = match args.first() {
                    Some(n) => n.parse().ok()?,
                    None => self.status,
                };
                self.exited = true;
            }
            "sleep" => {
                let mut total = 0.0;
                for a in args {
                    total += duration(a)?;
                }
                self.seconds += total;
                self.status = 0;
            }
            "echo" => {
                // `-n` and `-e` change nothing a log line shows.
                let words: Vec<&str> = args
                    .iter()
                    .map(String::as_str)
                    .skip_while(|a| matches!(*a, "-n" | "-e" | "-ne" | "-en"))
                    .collect();
                self.write(Line::Text(words.join(" ")));
                self.status = 0;
            }
            "date" if args.is_empty() => {
                self.write(Line::Date);
                self.status = 0;
            }
            "true" | ":" | "printf" => self.status = 0,
            "false" => self.status = 1,
            _ => return None,
        }
        Some(())
    }

    fn write(&mut self, line: Line) {
        self.output.push(Output {
            after_seconds: self.seconds,
            line,
        });
    }

    fn finish(self) -> Outcome {
        Outcome {
            seconds: self.seconds,
            code: self.status.rem_euclid(256),
            output: self.output,
        }
    }
}

/// `sleep`'s operand: seconds, or with an `s`, `m`, `h` or `d` suffix.
fn duration(arg: &str) -> Option<f64> {
    let (number, unit) = match arg.char_indices().last()? {
        (i, 's') => (&arg[..i], 1.0),
        (i, 'm') => (&arg[..i], 60.0),
        (i, 'h') => (&arg[..i], 3600.0),
        (i, 'd') => (&arg[..i], 86400.0),
        _ => (arg, 1.0),
    };
    let n: f64 = number.parse().ok()?;
    (n.is_finite() && n >= 0.0).then_some(n * unit)
}

/// A separator between commands of a script.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sep {
    /// `;` or a new line: the next command runs whatever this one returned.
    Then,
    /// `&&`: the next command runs only if this one succeeded.
    And,
}

/// Runs a script of simple commands; `None` as soon as something is beyond this module.
fn script(text: &str) -> Option<Outcome> {
    let mut state = State::default();
    let mut skip = false;
    for (words, sep) in split(text)? {
        if !words.is_empty() && !skip {
            state.run(&words)?;
            if state.exited {
                break;
            }
        }
        // After a failed `a && b`, `b` does not run; the status stays the failure.
        skip = sep == Sep::And && (skip || state.status != 0);
    }
    Some(state.finish())
}

/// The script's commands as words (quotes removed), each with the separator after it. `None`
/// for anything but plain words, quotes, `;`, `&&` and new lines (pipes, redirections,
/// substitutions, variables, control flow).
fn split(text: &str) -> Option<Vec<(Vec<String>, Sep)>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars().peekable();
    let end_word = |word: &mut Option<String>, words: &mut Vec<String>| {
        if let Some(w) = word.take() {
            words.push(w);
        }
    };
    while let Some(ch) = chars.next() {
        match ch {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' | '\\' => return None,
                        c => w.push(c),
                    }
                }
            }
            ';' | '\n' => {
                end_word(&mut word, &mut words);
                commands.push((std::mem::take(&mut words), Sep::Then));
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                end_word(&mut word, &mut words);
                commands.push((std::mem::take(&mut words), Sep::And));
            }
            c if c.is_whitespace() => end_word(&mut word, &mut words),
            '#' if word.is_none() => {
                // A comment runs to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                end_word(&mut word, &mut words);
                commands.push((std::mem::take(&mut words), Sep::Then));
            }
            '|' | '&' | '<' | '>' | '$' | '`' | '\\' | '(' | ')' | '{' | '}' | '*' | '?' | '['
            | ']' => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    end_word(&mut word, &mut words);
    commands.push((words, Sep::Then));
    // Shell keywords start control flow, which this module does not follow.
    let keyword = |w: &str| {
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
        )
    };
    if commands
        .iter()
        .any(|(w, _)| w.first().is_some_and(|w| keyword(w)))
    {
        return None;
    }
    Some(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(command: &[&str], args: &[&str]) -> Option<(f64, i32)> {
        outcome(command.iter().chain(args).copied()).map(|o| (o.seconds, o.code))
    }

    fn ends(seconds: f64, code: i32) -> Option<(f64, i32)> {
        Some((seconds, code))
    }

    #[test]
    fn echo_and_date_write_lines() {
        // The CronJob docs' example.
        let o = outcome([
            "/bin/sh",
            "-c",
            "date; echo Hello from the Kubernetes cluster",
        ])
        .expect("a known script");
        assert_eq!(
            o.output.iter().map(|l| l.line.clone()).collect::<Vec<_>>(),
            [
                Line::Date,
                Line::Text("Hello from the Kubernetes cluster".into())
            ]
        );
        let o = outcome(["sh", "-c", "echo -n 'a  b'; sleep 2; echo c"]).expect("a known script");
        assert_eq!(o.output[0].line, Line::Text("a  b".into()));
        assert_eq!(o.output[1].after_seconds, 2.0);
        assert_eq!(
            outcome(["date", "+%s"]),
            None,
            "a format is beyond this module"
        );
    }

    #[test]
    fn known_commands_end_as_they_would() {
        // The e2e Job fixtures' "succeed" and "fail", and everyday one-liners.
        assert_eq!(of(&["/bin/sh", "-c", "exit 0"], &[]), ends(0.0, 0));
        assert_eq!(of(&["/bin/sh", "-c", "exit 1"], &[]), ends(0.0, 1));
        assert_eq!(of(&["sh", "-c"], &["sleep 2; exit 3"]), ends(2.0, 3));
        assert_eq!(of(&["echo", "Hello World"], &[]), ends(0.0, 0));
        assert_eq!(of(&["/bin/false"], &[]), ends(0.0, 1));
        assert_eq!(of(&["sleep", "1.5"], &[]), ends(1.5, 0));
        assert_eq!(of(&["sleep"], &["1m"]), ends(60.0, 0));
        assert_eq!(
            of(&["sh", "-c", "echo 'a; b' && sleep 1"], &[]),
            ends(1.0, 0)
        );
        assert_eq!(
            of(&["sh", "-c", "false && sleep 5; echo done"], &[]),
            ends(0.0, 0)
        );
        assert_eq!(of(&["sh", "-c", "false && sleep 5"], &[]), ends(0.0, 1));
        assert_eq!(of(&["bash", "-c", "exit 300"], &[]), ends(0.0, 44));
        assert_eq!(of(&["sh", "-c", "exit 2; sleep 100"], &[]), ends(0.0, 2));
        assert_eq!(
            of(&["sh", "-c", "# comment\nsleep 1\nexit 0"], &[]),
            ends(1.0, 0)
        );
    }

    #[test]
    fn anything_else_runs_until_stopped() {
        assert_eq!(of(&[], &[]), None, "the image's entrypoint");
        assert_eq!(of(&["nginx"], &[]), None);
        assert_eq!(of(&["sh", "-c", "while true; do sleep 1; done"], &[]), None);
        assert_eq!(of(&["sh", "-c", "exit $(( $RANDOM / 16384 ))"], &[]), None);
        assert_eq!(
            of(&["sh", "-c", "if [ -r /data/foo ]; then exit 0; fi"], &[]),
            None
        );
        assert_eq!(of(&["sh", "-c", "cat /etc/hosts | wc -l"], &[]), None);
        assert_eq!(of(&["sh"], &[]), None, "a shell without -c reads stdin");
        assert_eq!(
            of(&["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"], &[]),
            None
        );
    }
}
