//! A shell command line, parsed into the simple commands it would run.
//!
//! # Why a parser of our own
//!
//! A guard that greps (`rm -rf /` as a substring) is beaten by a quote
//! (`r"m" -rf /`), a variable (`d=/; rm -rf $d`) or a wrapper (`sudo env
//! rm …`), and cries wolf at `echo "rm -rf /"`. So the guard reads the line
//! as bash would, far enough to know *which programs run with which
//! arguments*. The shell parser crates on the registry were tried first:
//! brush-parser (maintained, MIT) pulls wasm-bindgen into a
//! `wasm32-unknown-unknown` build (its component imports
//! `__wbindgen_placeholder__`, so it cannot load in a sandbox that grants
//! nothing); yash-syntax is GPL-3.0, which toolgate (Apache-2.0) cannot
//! embed; conch-parser has had no release since 2019. A guard also needs
//! what a full parser does not give: `sh -c` strings, `eval`, wrappers,
//! `base64 -d | sh` payloads, parsed as commands in their turn.
//!
//! # What it reads
//!
//! Lists (`;`, `&&`, `||`, `&`, newlines), pipelines (`|`, `|&`),
//! subshells and groups, `$(…)`, backticks, `<(…)`/`>(…)`, quotes (`'…'`,
//! `"…"`, `$'…'` with its escapes), backslashes, redirections (with their
//! targets, here-documents and here-strings), assignments (remembered for
//! the rest of the line: `d=/; rm -rf $d` deletes `/`), `for` lists, `case`
//! patterns, function definitions, and the words of `if`/`while`/`{ }`.
//! What it cannot know (a variable set elsewhere, `$1`) stays marked
//! `dynamic` so a rule can decide what an unknown means. Every input ends
//! (no backtracking, nesting bounded by [`MAX_DEPTH`]); a line it cannot
//! finish (an unclosed quote) is still read as far as it goes, as bash
//! would refuse it anyway.

use std::collections::BTreeMap;

/// How deep `sh -c`, `eval`, substitutions and decoded payloads may nest.
/// Deeper than this, the innermost text is not read: [`Script::too_deep`]
/// says so and the guard treats the line as unreadable.
pub const MAX_DEPTH: u8 = 8;

/// One word after quote removal and the expansions the line itself defines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The text bash would pass, as far as the line shows it. `~` and
    /// `$HOME` read as `~`; an unknown `$X` stays as `$X`.
    pub text: String,
    /// Part of it is only known when it runs (an unknown variable, a
    /// command substitution, a glob over a directory).
    pub dynamic: bool,
    /// Some of it was quoted (so `*` is not a glob, `{` not a keyword).
    pub quoted: bool,
    /// The commands its `$(…)`/backticks run, as indices into
    /// [`Script::commands`].
    pub substituted: Vec<usize>,
}

/// A redirection: `>`, `>>`, `<`, `2>&1`, `&>`, `<<<`…
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// The operator without its file descriptor (`>`, `>>`, `<`, `>&`, `<<`, `<<<`).
    pub op: &'static str,
    /// The file (or here-string, or dup'd descriptor).
    pub target: Word,
}

impl Redirect {
    /// Whether it writes to its target as a file.
    pub fn writes(&self) -> bool {
        matches!(self.op, ">" | ">>" | ">|" | "&>" | "&>>" | "<>")
            || (self.op == ">&"
                && !self
                    .target
                    .text
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '-'))
    }
}

/// Where a command's standard input comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Stdin {
    /// The terminal, or whatever the agent gives it.
    #[default]
    Inherited,
    /// The command at this index of [`Script::commands`], through a pipe.
    Pipe(usize),
    /// A here-document or here-string, whose text is this.
    Text(String),
}

/// One simple command: what runs, with what.
#[derive(Clone, Debug, Default)]
pub struct Command {
    /// `NAME=value` words before the program.
    pub assigns: Vec<(String, Word)>,
    /// The program and its arguments.
    pub words: Vec<Word>,
    /// Its redirections.
    pub redirects: Vec<Redirect>,
    /// Its standard input.
    pub stdin: Stdin,
    /// How deep in `sh -c`/`eval`/substitutions it was found (0: the line itself).
    pub depth: u8,
    /// Wrappers stripped in front of it (`sudo`, `env`, `xargs`, `find -exec`…).
    pub wrappers: Vec<String>,
    /// Where it came from, when not from the line itself: `sh -c`,
    /// `eval`, `$(…)`, `base64 -d | sh`…
    pub origin: Option<String>,
    /// It ends with `&`: the line goes on without waiting for it.
    pub background: bool,
}

impl Command {
    /// The program's name without its directory (`/bin/rm` → `rm`), if known.
    pub fn program(&self) -> Option<&str> {
        let first = self.words.first()?;
        if first.text.is_empty() {
            return None;
        }
        Some(first.text.rsplit('/').next().unwrap_or(&first.text))
    }

    /// The arguments after the program.
    pub fn args(&self) -> &[Word] {
        self.words.get(1..).unwrap_or(&[])
    }
}

/// A whole command line: every simple command it would run, in order,
/// including those inside substitutions and `sh -c` strings.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// Every simple command.
    pub commands: Vec<Command>,
    /// Functions the line defines, with the programs their bodies call.
    pub functions: BTreeMap<String, Vec<usize>>,
    /// Nesting went past [`MAX_DEPTH`]: some text was not read.
    pub too_deep: bool,
    /// The `while`/`until` loops the line runs, in the order they close.
    pub loops: Vec<Loop>,
}

/// A `while`/`until` loop: its commands are `first..end` of
/// [`Script::commands`], `first` being (the start of) its condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// Its first command (the condition's).
    pub first: usize,
    /// One past its last command.
    pub end: usize,
    /// `until` rather than `while`.
    pub until: bool,
}

/// Parses a command line.
pub fn parse(line: &str) -> Script {
    let mut script = Script::default();
    let mut vars = BTreeMap::new();
    parse_into(line, 0, None, &mut script, &mut vars);
    script
}

/// Parses `text` at `depth`, appending its commands to `script`. Returns
/// the indices of the commands it added.
pub(crate) fn parse_into(
    text: &str,
    depth: u8,
    origin: Option<&str>,
    script: &mut Script,
    vars: &mut BTreeMap<String, Vec<String>>,
) -> Vec<usize> {
    if depth > MAX_DEPTH {
        script.too_deep = true;
        return Vec::new();
    }
    let start = script.commands.len();
    let mut p = Parser::new(text, depth, origin, script, vars);
    p.run();
    (start..p.script.commands.len()).collect()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Reading a command.
    Command,
    /// After `for NAME`: the loop's words, up to `;`, a newline or `do`.
    ForList,
    /// After `case WORD`: up to `in`.
    CaseWord,
    /// Reading `case` patterns, up to `)`.
    CasePattern,
}

struct Parser<'a> {
    s: Vec<char>,
    i: usize,
    depth: u8,
    origin: Option<String>,
    script: &'a mut Script,
    vars: &'a mut BTreeMap<String, Vec<String>>,
    cur: Command,
    pending_pipe: Option<usize>,
    /// Here-documents whose bodies start after the next newline: the
    /// command they feed, the delimiter, whether tabs are stripped, and
    /// whether the body expands (an unquoted delimiter).
    heredocs: Vec<(HeredocFor, String, bool)>,
    mode: Mode,
    /// Open function bodies: the name and the first command of its body.
    function_stack: Vec<(String, usize, usize)>,
    next_is_function_name: bool,
    /// The variable of the `for` loop being read.
    for_var: Option<String>,
    /// Open `while`/`until` loops: their first command, and whether `until`.
    open_loops: Vec<(usize, bool)>,
}

/// Which command a here-document feeds: the one being read, or one already finished.
#[derive(Clone, Copy)]
enum HeredocFor {
    Current,
    Done(usize),
}

const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
    "esac", "[[", "]]", "coproc", "in",
];

pub(crate) fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}

impl<'a> Parser<'a> {
    fn new(
        text: &str,
        depth: u8,
        origin: Option<&str>,
        script: &'a mut Script,
        vars: &'a mut BTreeMap<String, Vec<String>>,
    ) -> Self {
        Parser {
            s: text.chars().collect(),
            i: 0,
            depth,
            origin: origin.map(str::to_owned),
            script,
            vars,
            cur: Command::default(),
            pending_pipe: None,
            heredocs: Vec::new(),
            mode: Mode::Command,
            function_stack: Vec::new(),
            next_is_function_name: false,
            for_var: None,
            open_loops: Vec::new(),
        }
    }

    /// The text from `start` to `end`, both clamped to the input: a reader
    /// that stepped past the end (an unclosed quote, a trailing backslash)
    /// reads what there is.
    fn text(&self, start: usize, end: usize) -> String {
        let end = end.min(self.s.len());
        self.s[start.min(end)..end].iter().collect()
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }
    fn peek_at(&self, n: usize) -> Option<char> {
        self.s.get(self.i + n).copied()
    }

    fn run(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' => self.i += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.i += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\n' => {
                    self.i += 1;
                    self.end_command(false);
                    self.read_heredoc_bodies();
                    if matches!(self.mode, Mode::ForList) {
                        self.mode = Mode::Command;
                    }
                }
                ';' => {
                    self.i += 1;
                    let double = self.peek() == Some(';');
                    if double {
                        self.i += 1;
                        if self.peek() == Some('&') {
                            self.i += 1;
                        }
                    }
                    self.end_command(false);
                    if double {
                        self.mode = Mode::CasePattern;
                    } else if self.mode == Mode::ForList {
                        self.mode = Mode::Command;
                    }
                }
                '&' if self.peek_at(1) == Some('>') => self.redirect(),
                '&' => {
                    self.i += 1;
                    if self.peek() == Some('&') {
                        self.i += 1;
                    } else {
                        self.cur.background = true;
                    }
                    self.end_command(false);
                }
                '|' => {
                    self.i += 1;
                    match self.peek() {
                        Some('|') => {
                            self.i += 1;
                            self.end_command(false);
                        }
                        Some('&') => {
                            self.i += 1;
                            self.end_command(true);
                        }
                        _ => self.end_command(true),
                    }
                }
                '(' => {
                    self.i += 1;
                    if self.peek() == Some('(') {
                        // `(( arithmetic ))`: nothing runs.
                        self.skip_balanced('(', ')');
                        continue;
                    }
                    if self.cur.words.len() == 1 && self.cur.assigns.is_empty() {
                        // `name() { … }`: a function definition.
                        self.skip_spaces();
                        if self.peek() == Some(')') {
                            self.i += 1;
                        }
                        let name = self.cur.words.remove(0).text;
                        self.cur = Command::default();
                        self.begin_function(name);
                        continue;
                    }
                    let group_pipe = self.pending_pipe;
                    self.end_command(false);
                    self.pending_pipe = group_pipe;
                }
                ')' => {
                    self.i += 1;
                    if self.mode == Mode::CasePattern {
                        self.mode = Mode::Command;
                        self.cur = Command::default();
                        continue;
                    }
                    self.end_command(false);
                }
                '<' | '>' => {
                    if self.peek_at(1) == Some('(') {
                        self.word();
                    } else {
                        self.redirect();
                    }
                }
                c if c.is_ascii_digit() && self.digits_then_redirect() => self.redirect(),
                _ => self.word(),
            }
        }
        self.end_command(false);
        self.read_heredoc_bodies();
        while let Some((name, first, _)) = self.function_stack.pop() {
            self.close_function(name, first);
        }
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
    }

    fn digits_then_redirect(&self) -> bool {
        let mut j = self.i;
        while self.s.get(j).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        }
        matches!(self.s.get(j), Some('<' | '>')) && self.s.get(j + 1) != Some(&'(')
    }

    /// Skips to the matching `close` (the opening one already read), quotes respected.
    fn skip_balanced(&mut self, open: char, close: char) -> String {
        let start = self.i;
        let mut level = 1usize;
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.i += 1,
                '\'' => {
                    self.i += 1;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.i += 1;
                    }
                }
                '"' => {
                    self.i += 1;
                    while let Some(c) = self.peek() {
                        if c == '\\' {
                            self.i += 1;
                        } else if c == '"' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                c if c == open => level += 1,
                c if c == close => {
                    level -= 1;
                    if level == 0 {
                        let inner = self.text(start, self.i);
                        self.i += 1;
                        return inner;
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        self.text(start, self.s.len())
    }

    fn begin_function(&mut self, name: String) {
        let first = self.script.commands.len();
        self.function_stack.push((name, first, 0));
    }

    fn close_function(&mut self, name: String, first: usize) {
        let body: Vec<usize> = (first..self.script.commands.len()).collect();
        self.script.functions.entry(name).or_default().extend(body);
    }

    /// A `{` or `}` as a whole word at a command's start.
    fn brace_word(&mut self, word: &Word) -> bool {
        if word.quoted || !self.cur.words.is_empty() || !self.cur.assigns.is_empty() {
            return false;
        }
        match word.text.as_str() {
            "{" => {
                if let Some(top) = self.function_stack.last_mut() {
                    top.2 += 1;
                }
                true
            }
            "}" => {
                self.end_command(false);
                if let Some(top) = self.function_stack.last_mut() {
                    top.2 = top.2.saturating_sub(1);
                    if top.2 == 0 {
                        let (name, first, _) = self.function_stack.pop().unwrap_or_default();
                        self.close_function(name, first);
                    }
                }
                true
            }
            _ => false,
        }
    }

    fn word(&mut self) {
        let (word, assign) = self.read_word();
        match self.mode {
            Mode::CasePattern => return,
            Mode::CaseWord => {
                if word.text == "in" && !word.quoted {
                    self.mode = Mode::CasePattern;
                }
                return;
            }
            Mode::ForList => {
                if word.text == "do" && !word.quoted {
                    self.mode = Mode::Command;
                    return;
                }
                if (word.text != "in" || word.quoted)
                    && let Some(var) = self.for_var.clone()
                {
                    self.vars.entry(var).or_default().push(word.text);
                }
                return;
            }
            Mode::Command => {}
        }
        if self.brace_word(&word) {
            return;
        }
        if self.next_is_function_name {
            self.next_is_function_name = false;
            self.begin_function(word.text);
            return;
        }
        let at_start = self.cur.words.is_empty();
        if at_start && !word.quoted {
            match word.text.as_str() {
                "for" | "select" => {
                    self.end_command(false);
                    self.skip_spaces();
                    let (var, _) = self.read_word();
                    self.vars.insert(var.text.clone(), Vec::new());
                    self.for_var = Some(var.text);
                    self.mode = Mode::ForList;
                    return;
                }
                "case" => {
                    self.mode = Mode::CaseWord;
                    return;
                }
                "function" => {
                    self.next_is_function_name = true;
                    return;
                }
                "while" | "until" if self.cur.assigns.is_empty() => {
                    self.open_loops
                        .push((self.script.commands.len(), word.text == "until"));
                    return;
                }
                "done" if self.cur.assigns.is_empty() => {
                    if let Some((first, until)) = self.open_loops.pop() {
                        self.script.loops.push(Loop {
                            first,
                            end: self.script.commands.len(),
                            until,
                        });
                    }
                    return;
                }
                k if KEYWORDS.contains(&k) && self.cur.assigns.is_empty() => return,
                _ => {}
            }
        }
        if at_start && let Some((name, value)) = assign {
            self.cur.assigns.push((name, value));
            return;
        }
        self.cur.words.push(word);
    }

    fn redirect(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let ops: [&'static str; 13] = [
            "&>>", "<<<", "<<-", "&>", ">>", ">|", ">&", "<&", "<>", "<<", ">", "<", "&",
        ];
        let rest = self.text(self.i, self.i + 3);
        let op = ops
            .iter()
            .find(|op| rest.starts_with(**op))
            .copied()
            .unwrap_or(">");
        self.i += op.len();
        self.skip_spaces();
        if op == "<<" || op == "<<-" {
            let (delim, _) = self.read_word();
            self.heredocs
                .push((HeredocFor::Current, delim.text, op == "<<-"));
            return;
        }
        let (target, _) = self.read_word();
        if op == "<<<" {
            self.cur.stdin = Stdin::Text(target.text.clone());
        }
        self.cur.redirects.push(Redirect { op, target });
    }

    fn read_heredoc_bodies(&mut self) {
        let pending = std::mem::take(&mut self.heredocs);
        for (feeds, delim, strip_tabs) in pending {
            let mut body = String::new();
            loop {
                let start = self.i;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                let line = self.text(start, self.i);
                let at_end = self.peek().is_none();
                if self.peek() == Some('\n') {
                    self.i += 1;
                }
                let line = if strip_tabs {
                    line.trim_start_matches('\t').to_owned()
                } else {
                    line
                };
                if line == delim {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
                if at_end {
                    break;
                }
            }
            match feeds {
                HeredocFor::Current => self.cur.stdin = Stdin::Text(body),
                HeredocFor::Done(at) => {
                    if let Some(cmd) = self.script.commands.get_mut(at) {
                        cmd.stdin = Stdin::Text(body);
                    }
                }
            }
        }
    }

    /// Ends the command being read; `piped` when a `|` follows it.
    fn end_command(&mut self, piped: bool) {
        let mut cmd = std::mem::take(&mut self.cur);
        if cmd.words.is_empty() {
            // Assignments alone set variables for the rest of the line.
            for (name, value) in cmd.assigns.drain(..) {
                self.vars.insert(name, vec![value.text]);
            }
            if !cmd.redirects.is_empty() {
                cmd.depth = self.depth;
                cmd.origin = self.origin.clone();
                let at = self.script.commands.len();
                self.script.commands.push(cmd);
                self.rebind_heredocs(at);
                if piped {
                    self.pending_pipe = Some(at);
                }
            } else if piped {
                // `| ` after a group: the group's last command feeds it.
                self.pending_pipe = self.script.commands.len().checked_sub(1);
            }
            return;
        }
        if cmd.words.first().is_some_and(|w| {
            w.text == "export"
                || w.text == "declare"
                || w.text == "local"
                || w.text == "readonly"
                || w.text == "typeset"
        }) {
            for w in cmd.words.iter().skip(1) {
                if let Some((name, value)) = w.text.split_once('=')
                    && is_name(name)
                {
                    self.vars.insert(name.to_owned(), vec![value.to_owned()]);
                }
            }
        }
        if let Some(from) = self.pending_pipe.take()
            && cmd.stdin == Stdin::Inherited
        {
            cmd.stdin = Stdin::Pipe(from);
        }
        cmd.depth = self.depth;
        cmd.origin = self.origin.clone();
        let at = self.script.commands.len();
        self.script.commands.push(cmd);
        self.rebind_heredocs(at);
        crate::wrappers::unwrap(at, self.script, self.vars, self.depth);
        if piped {
            self.pending_pipe = Some(at);
        }
    }

    fn rebind_heredocs(&mut self, at: usize) {
        for h in &mut self.heredocs {
            if matches!(h.0, HeredocFor::Current) {
                h.0 = HeredocFor::Done(at);
            }
        }
    }

    /// Reads one word; also returns it as an assignment if it is `NAME=value`.
    fn read_word(&mut self) -> (Word, Option<(String, Word)>) {
        let mut w = Word::default();
        let mut literal_prefix = true;
        let mut assign_at: Option<usize> = None;
        let start = self.i;
        if self.peek() == Some('~') {
            self.i += 1;
            w.text.push('~');
        }
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | '\r' | ';' | '&' | '|' | ')' => break,
                '(' if self.i > start && assign_at == Some(w.text.len()) => {
                    // `a=(x y)`: an array; its words are values.
                    self.i += 1;
                    let inner = self.skip_balanced('(', ')');
                    w.text.push_str(inner.trim());
                }
                '(' => break,
                '<' | '>' if self.peek_at(1) == Some('(') && self.i == start => {
                    self.i += 2;
                    let inner = self.skip_balanced('(', ')');
                    let cmds = self.nested(&inner, "process substitution");
                    w.substituted.extend(cmds);
                    w.text.push_str("/dev/fd/63");
                    w.dynamic = true;
                }
                '<' | '>' => break,
                '\\' => {
                    self.i += 1;
                    match self.peek() {
                        Some('\n') => self.i += 1,
                        Some(c) => {
                            w.text.push(c);
                            w.quoted = true;
                            self.i += 1;
                        }
                        None => {}
                    }
                    literal_prefix = false;
                }
                '\'' => {
                    self.i += 1;
                    while let Some(c) = self.peek() {
                        self.i += 1;
                        if c == '\'' {
                            break;
                        }
                        w.text.push(c);
                    }
                    w.quoted = true;
                    literal_prefix = false;
                }
                '"' => {
                    self.i += 1;
                    self.double_quoted(&mut w);
                    w.quoted = true;
                    literal_prefix = false;
                }
                '$' if self.peek_at(1) == Some('\'') => {
                    self.i += 2;
                    self.ansi_c(&mut w);
                    w.quoted = true;
                    literal_prefix = false;
                }
                '$' => {
                    self.i += 1;
                    self.dollar(&mut w);
                    literal_prefix = false;
                }
                '`' => {
                    self.i += 1;
                    self.backtick(&mut w);
                    literal_prefix = false;
                }
                '=' if literal_prefix
                    && assign_at.is_none()
                    && is_name(w.text.trim_end_matches('+')) =>
                {
                    self.i += 1;
                    w.text.push('=');
                    assign_at = Some(w.text.len());
                    if self.peek() == Some('~') {
                        self.i += 1;
                        w.text.push('~');
                    }
                }
                '*' | '?' | '[' if !w.quoted => {
                    w.text.push(c);
                    self.i += 1;
                }
                ':' if assign_at.is_some() && self.peek_at(1) == Some('~') => {
                    self.i += 2;
                    w.text.push_str(":~");
                }
                _ => {
                    w.text.push(c);
                    self.i += 1;
                }
            }
        }
        let assign = assign_at.map(|at| {
            let name = w.text[..at - 1].trim_end_matches('+').to_owned();
            let value = Word {
                text: w.text[at..].to_owned(),
                ..w.clone()
            };
            (name, value)
        });
        if self.i == start {
            // Nothing readable here (a stray character): step over it.
            self.i += 1;
        }
        (w, assign)
    }

    fn double_quoted(&mut self, w: &mut Word) {
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                '"' => return,
                '\\' => match self.peek() {
                    Some(n @ ('$' | '`' | '"' | '\\')) => {
                        w.text.push(n);
                        self.i += 1;
                    }
                    Some('\n') => self.i += 1,
                    _ => w.text.push('\\'),
                },
                '$' => self.dollar(w),
                '`' => self.backtick(w),
                _ => w.text.push(c),
            }
        }
    }

    fn ansi_c(&mut self, w: &mut Word) {
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(e) = self.peek() else { return };
                    self.i += 1;
                    let simple = match e {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        'a' => Some('\x07'),
                        'b' => Some('\x08'),
                        'e' | 'E' => Some('\x1b'),
                        'f' => Some('\x0c'),
                        'v' => Some('\x0b'),
                        '\\' | '\'' | '"' | '?' => Some(e),
                        _ => None,
                    };
                    if let Some(ch) = simple {
                        w.text.push(ch);
                        continue;
                    }
                    let (radix, max) = match e {
                        'x' => (16, 2),
                        'u' => (16, 4),
                        'U' => (16, 8),
                        '0'..='7' => {
                            self.i -= 1;
                            (8, 3)
                        }
                        _ => {
                            w.text.push('\\');
                            w.text.push(e);
                            continue;
                        }
                    };
                    let mut n = 0u32;
                    let mut read = 0;
                    while read < max
                        && let Some(d) = self.peek().and_then(|c| c.to_digit(radix))
                    {
                        n = n * radix + d;
                        self.i += 1;
                        read += 1;
                    }
                    if let Some(ch) = char::from_u32(n) {
                        w.text.push(ch);
                    }
                }
                _ => w.text.push(c),
            }
        }
    }

    fn backtick(&mut self, w: &mut Word) {
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == '\\' {
                self.i += 1;
            } else if c == '`' {
                break;
            }
            self.i += 1;
        }
        let inner = self.text(start, self.i);
        self.i += 1;
        let cmds = self.nested(&inner.replace("\\`", "`"), "`…`");
        w.substituted.extend(cmds);
        w.text.push_str("$(…)");
        w.dynamic = true;
    }

    /// After a `$`: a substitution, arithmetic or a parameter.
    fn dollar(&mut self, w: &mut Word) {
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.i += 2;
                self.skip_balanced('(', ')');
                if self.peek() == Some(')') {
                    self.i += 1;
                }
                w.text.push('0');
                w.dynamic = true;
            }
            Some('(') => {
                self.i += 1;
                let inner = self.skip_balanced('(', ')');
                let cmds = self.nested(&inner, "$(…)");
                w.substituted.extend(cmds);
                w.text.push_str("$(…)");
                w.dynamic = true;
            }
            Some('{') => {
                self.i += 1;
                let inner = self.skip_balanced('{', '}');
                let (name, default) = split_parameter(&inner);
                match self.lookup(name) {
                    Some(value) => w.text.push_str(&value),
                    None => match default {
                        Some(d) => {
                            // `${X:-/}`: the default is what an unset X gives.
                            let sub = parse_word_text(d, self.depth, self.script, self.vars);
                            w.text.push_str(&sub.text);
                            w.dynamic |= sub.dynamic;
                            w.substituted.extend(sub.substituted);
                        }
                        None => {
                            w.text.push_str("${");
                            w.text.push_str(name);
                            w.text.push('}');
                            w.dynamic = true;
                        }
                    },
                }
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                {
                    self.i += 1;
                }
                let name = self.text(start, self.i);
                match self.lookup(&name) {
                    Some(value) => w.text.push_str(&value),
                    None => {
                        w.text.push('$');
                        w.text.push_str(&name);
                        w.dynamic = true;
                    }
                }
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.i += 1;
                w.text.push('$');
                w.text.push(c);
                w.dynamic = true;
            }
            _ => w.text.push('$'),
        }
    }

    fn lookup(&self, name: &str) -> Option<String> {
        match name {
            "HOME" => return Some("~".to_owned()),
            "PWD" => return Some(".".to_owned()),
            _ => {}
        }
        self.vars.get(name).and_then(|v| v.first()).cloned()
    }

    fn nested(&mut self, text: &str, origin: &str) -> Vec<usize> {
        // A substitution runs before its command: its pipe and here-docs are its own.
        let saved_pipe = self.pending_pipe.take();
        let saved_cur = std::mem::take(&mut self.cur);
        let cmds = parse_into(text, self.depth + 1, Some(origin), self.script, self.vars);
        self.cur = saved_cur;
        self.pending_pipe = saved_pipe;
        cmds
    }
}

/// `NAME`, `NAME:-default`, `NAME-default`, `#NAME`… → the name and a default.
fn split_parameter(inner: &str) -> (&str, Option<&str>) {
    let inner = inner.trim_start_matches(['#', '!']);
    let end = inner
        .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
        .unwrap_or(inner.len());
    let (name, rest) = inner.split_at(end);
    let default = rest
        .strip_prefix(":-")
        .or_else(|| rest.strip_prefix('-'))
        .or_else(|| rest.strip_prefix(":="))
        .or_else(|| rest.strip_prefix('='));
    (name, default)
}

/// One word's text read on its own (a `${X:-…}` default).
fn parse_word_text(
    text: &str,
    depth: u8,
    script: &mut Script,
    vars: &mut BTreeMap<String, Vec<String>>,
) -> Word {
    let mut p = Parser::new(text, depth, None, script, vars);
    p.read_word().0
}
