//! The one bound every YAML (or JSON) reader applies before a parser sees the
//! text: its size and its nesting depth, found by a single linear pass.
//!
//! Why a pass of our own: libyaml (under serde_yaml) tokenizes the whole text
//! before serde_yaml's own depth limit (128) applies, and its cost grows with
//! nesting times length (32 KiB of `[` took 1.4 s; 200 KB ran past a minute).
//! The pass follows libyaml's tokenizer where depth is decided — flow levels
//! (`[`, `{`), its stack of block indentation levels, and the scalars and
//! comments it skips (quoted, plain, block, with their continuation lines) —
//! so a bracket inside a string or a comment is never counted, and no text
//! that libyaml reads as structure is ever skipped. Where the two could differ
//! the pass counts more, never less.

/// How deep a document may nest (flow collections plus block levels).
///
/// The deepest object the readers take (a JobSet's pod template affinity term,
/// inside a List) nests about 20 levels, so 100 leaves five times that; and it
/// stays below the 128 at which serde_json and serde_yaml give up anyway, so
/// this bound only turns a slow refusal into a fast one, naming where.
pub const MAX_NESTING: usize = 100;

/// The largest file read whole, as one value tree (YAML, or JSON that is not a
/// list). Reading YAML whole peaks at about 17 times its text (parser events,
/// the value tree, then the messages; a 64 MiB pods file peaked at 1.09 GB
/// RSS), so 16 MiB (some 4,000 pods as kubectl prints them) keeps the CLI
/// near 300 MB. JSON lists are read item by item and are not bound by this.
pub const MAX_WHOLE_FILE_BYTES: usize = 16 * 1024 * 1024;

/// Why a text was refused before parsing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BoundsError {
    /// Longer than the reader's limit.
    #[error("it is {bytes} bytes; at most {limit} are read")]
    TooLarge {
        /// The text's length.
        bytes: usize,
        /// The limit it passed.
        limit: usize,
    },
    /// Nested deeper than [`MAX_NESTING`].
    #[error(
        "nested more than {limit} levels deep at line {line}, column {column}; at most {limit} levels are read"
    )]
    TooDeep {
        /// 1-based line where the limit was passed.
        line: usize,
        /// 1-based column (in characters) where the limit was passed.
        column: usize,
        /// The nesting limit.
        limit: usize,
    },
}

/// Refuses `text` if it is longer than `max_bytes` or nests deeper than [`MAX_NESTING`].
pub fn check(text: &str, max_bytes: usize) -> Result<(), BoundsError> {
    if text.len() > max_bytes {
        return Err(BoundsError::TooLarge {
            bytes: text.len(),
            limit: max_bytes,
        });
    }
    Scanner::new(text.as_bytes(), MAX_NESTING).run()
}

/// The deepest nesting the pass sees in `text`, for tests.
#[cfg(test)]
fn max_depth(text: &str) -> usize {
    let mut scanner = Scanner::new(text.as_bytes(), usize::MAX);
    // An unlimited scan cannot refuse.
    let _ = scanner.run();
    scanner.max_seen
}

/// One block indentation level as libyaml keeps it.
struct Level {
    indent: isize,
    /// Opened by a mapping key (or `?`), not by a `-` entry.
    mapping: bool,
    /// A `-` sequence at the mapping's own column ("indentless") is open under it.
    indentless: bool,
}

/// libyaml's scanner, reduced to what decides depth: positions, flow level,
/// indentation stack and the one simple key that can open a block mapping.
struct Scanner<'a> {
    b: &'a [u8],
    pos: usize,
    line: usize,
    /// Column and index in characters, as libyaml counts them.
    col: usize,
    index: usize,
    flow: usize,
    levels: Vec<Level>,
    indentless: usize,
    simple_key_allowed: bool,
    /// A possible simple key at flow level 0: (line, index, column).
    key: Option<(usize, usize, usize)>,
    limit: usize,
    max_seen: usize,
}

impl<'a> Scanner<'a> {
    fn new(b: &'a [u8], limit: usize) -> Self {
        Scanner {
            b,
            pos: 0,
            line: 0,
            col: 0,
            index: 0,
            flow: 0,
            levels: Vec::new(),
            indentless: 0,
            simple_key_allowed: true,
            key: None,
            limit,
            max_seen: 0,
        }
    }

    fn at(&self, k: usize) -> Option<u8> {
        self.b.get(self.pos + k).copied()
    }

    fn is(&self, k: usize, c: u8) -> bool {
        self.at(k) == Some(c)
    }

    /// The length of the line break at `pos + k` (libyaml's five kinds), or 0.
    fn break_len(&self, k: usize) -> usize {
        let p = self.pos + k;
        match self.b.get(p..).unwrap_or_default() {
            [b'\r', b'\n', ..] => 2,
            [b'\r' | b'\n', ..] => 1,
            [0xC2, 0x85, ..] => 2,
            [0xE2, 0x80, 0xA8 | 0xA9, ..] => 3,
            _ => 0,
        }
    }

    fn is_blank(&self, k: usize) -> bool {
        matches!(self.at(k), Some(b' ' | b'\t'))
    }

    /// Blank, a break, NUL or the end: where libyaml's tokens stop.
    fn is_blankz(&self, k: usize) -> bool {
        matches!(self.at(k), None | Some(b' ' | b'\t' | 0)) || self.break_len(k) > 0
    }

    fn eof(&self) -> bool {
        self.pos >= self.b.len()
    }

    /// Moves over one character that is not a line break.
    fn advance(&mut self) {
        let len = match self.at(0) {
            None => return,
            Some(c) if c < 0x80 => 1,
            Some(c) if c >= 0xF0 => 4,
            Some(c) if c >= 0xE0 => 3,
            Some(c) if c >= 0xC0 => 2,
            Some(_) => 1,
        };
        self.pos = (self.pos + len).min(self.b.len());
        self.col += 1;
        self.index += 1;
    }

    /// Moves over the line break at the position.
    fn skip_break(&mut self) {
        let len = self.break_len(0);
        self.pos += len;
        self.line += 1;
        self.col = 0;
        self.index += 1;
    }

    fn document_marker(&self) -> bool {
        self.col == 0
            && ((self.is(0, b'-') && self.is(1, b'-') && self.is(2, b'-'))
                || (self.is(0, b'.') && self.is(1, b'.') && self.is(2, b'.')))
            && self.is_blankz(3)
    }

    fn indent(&self) -> isize {
        self.levels.last().map_or(-1, |l| l.indent)
    }

    fn depth(&self) -> usize {
        self.levels.len() + self.indentless + self.flow
    }

    fn check_depth(&mut self) -> Result<(), BoundsError> {
        let depth = self.depth();
        self.max_seen = self.max_seen.max(depth);
        if depth > self.limit {
            return Err(BoundsError::TooDeep {
                line: self.line + 1,
                column: self.col + 1,
                limit: self.limit,
            });
        }
        Ok(())
    }

    fn roll(&mut self, column: usize, mapping: bool) -> Result<(), BoundsError> {
        if self.flow > 0 {
            return Ok(());
        }
        let column = column as isize;
        if self.indent() < column {
            self.levels.push(Level {
                indent: column,
                mapping,
                indentless: false,
            });
            return self.check_depth();
        }
        Ok(())
    }

    fn unroll(&mut self, column: isize) {
        if self.flow > 0 {
            return;
        }
        while self.indent() > column {
            if let Some(level) = self.levels.pop()
                && level.indentless
            {
                self.indentless -= 1;
            }
        }
    }

    fn save_key(&mut self) {
        if self.simple_key_allowed && self.flow == 0 {
            self.key = Some((self.line, self.index, self.col));
        }
    }

    fn remove_key(&mut self) {
        if self.flow == 0 {
            self.key = None;
        }
    }

    fn run(&mut self) -> Result<(), BoundsError> {
        loop {
            self.skip_to_token();
            if let Some((line, index, _)) = self.key
                && (line < self.line || index + 1024 < self.index)
            {
                self.key = None;
            }
            self.unroll(self.col as isize);
            let Some(c) = self.at(0) else {
                return Ok(());
            };
            let start = self.pos;
            self.token(c)?;
            // A character no rule moves over (NUL, say) must not stop the pass.
            if self.pos == start {
                self.advance();
            }
        }
    }

    /// Spaces, comments and line breaks before a token.
    fn skip_to_token(&mut self) {
        loop {
            if self.col == 0 && self.b.get(self.pos..self.pos + 3) == Some(&[0xEF, 0xBB, 0xBF]) {
                self.advance();
            }
            while self.is(0, b' ')
                || ((self.flow > 0 || !self.simple_key_allowed) && self.is(0, b'\t'))
            {
                self.advance();
            }
            if self.is(0, b'#') {
                while !self.eof() && self.break_len(0) == 0 {
                    self.advance();
                }
            }
            if self.break_len(0) == 0 {
                return;
            }
            self.skip_break();
            if self.flow == 0 {
                self.simple_key_allowed = true;
            }
        }
    }

    fn token(&mut self, c: u8) -> Result<(), BoundsError> {
        if self.col == 0 && (c == b'%' || self.document_marker()) {
            // A directive or a document marker: the block levels start again.
            self.unroll(-1);
            self.remove_key();
            self.simple_key_allowed = false;
            if c == b'%' {
                while !self.eof() && self.break_len(0) == 0 {
                    self.advance();
                }
            } else {
                (0..3).for_each(|_| self.advance());
            }
            return Ok(());
        }
        match c {
            b'[' | b'{' => {
                self.save_key();
                self.flow += 1;
                self.simple_key_allowed = true;
                self.check_depth()?;
                self.advance();
            }
            b']' | b'}' => {
                self.remove_key();
                self.flow = self.flow.saturating_sub(1);
                self.simple_key_allowed = false;
                self.advance();
            }
            b',' => {
                self.remove_key();
                self.simple_key_allowed = true;
                self.advance();
            }
            b'-' if self.is_blankz(1) => {
                if self.flow == 0 {
                    self.sequence_entry()?;
                }
                self.remove_key();
                self.simple_key_allowed = true;
                self.advance();
            }
            b'?' if self.flow > 0 || self.is_blankz(1) => {
                self.roll(self.col, true)?;
                self.remove_key();
                self.simple_key_allowed = self.flow == 0;
                self.advance();
            }
            b':' if self.flow > 0 || self.is_blankz(1) => {
                self.value()?;
                self.advance();
            }
            b'*' | b'&' => {
                self.save_key();
                self.simple_key_allowed = false;
                self.advance();
                while matches!(self.at(0), Some(c) if c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
                {
                    self.advance();
                }
            }
            b'!' => {
                self.save_key();
                self.simple_key_allowed = false;
                self.advance();
                // A tag ends at a blank (or, in flow, at an indicator, which
                // counts a bracket libyaml might have read as a tag character).
                let tag_end = |s: &Self| {
                    s.is_blankz(0)
                        || (s.flow > 0 && matches!(s.at(0), Some(b',' | b'[' | b']' | b'{' | b'}')))
                };
                while !tag_end(self) {
                    self.advance();
                }
            }
            b'|' | b'>' if self.flow == 0 => {
                self.remove_key();
                self.simple_key_allowed = true;
                self.block_scalar();
            }
            b'\'' | b'"' => {
                self.save_key();
                self.simple_key_allowed = false;
                self.quoted(c == b'\'');
            }
            _ => {
                self.save_key();
                self.simple_key_allowed = false;
                if self.plain() {
                    self.simple_key_allowed = true;
                }
            }
        }
        Ok(())
    }

    /// A `-` entry in block context: a new level, or a sequence at its
    /// mapping's own column, which libyaml opens without a level of its own.
    fn sequence_entry(&mut self) -> Result<(), BoundsError> {
        let col = self.col as isize;
        if self.indent() < col {
            return self.roll(self.col, false);
        }
        if let Some(top) = self.levels.last_mut()
            && top.indent == col
            && top.mapping
            && !top.indentless
        {
            top.indentless = true;
            self.indentless += 1;
            return self.check_depth();
        }
        Ok(())
    }

    /// A `:` value indicator: in block context it opens a mapping at its key's column.
    fn value(&mut self) -> Result<(), BoundsError> {
        if self.flow > 0 {
            self.simple_key_allowed = false;
            return Ok(());
        }
        match self.key.take() {
            Some((_, _, column)) => {
                // A sibling key ends the sequence written at the mapping's column.
                if let Some(top) = self.levels.last_mut()
                    && top.indent == column as isize
                    && top.mapping
                    && top.indentless
                {
                    top.indentless = false;
                    self.indentless -= 1;
                }
                self.roll(column, true)?;
                self.simple_key_allowed = false;
            }
            None => {
                self.roll(self.col, true)?;
                self.simple_key_allowed = true;
            }
        }
        Ok(())
    }

    /// A quoted scalar, to its closing quote (over line breaks, as libyaml reads it).
    fn quoted(&mut self, single: bool) {
        let quote = if single { b'\'' } else { b'"' };
        self.advance();
        loop {
            if self.eof() || self.document_marker() {
                // libyaml stops with an error here; the pass reads on as tokens.
                return;
            }
            if self.break_len(0) > 0 {
                self.skip_break();
            } else if single && self.is(0, b'\'') && self.is(1, b'\'') {
                self.advance();
                self.advance();
            } else if self.is(0, quote) {
                self.advance();
                return;
            } else if !single && self.is(0, b'\\') {
                self.advance();
                if self.break_len(0) > 0 {
                    self.skip_break();
                } else {
                    self.advance();
                }
            } else {
                self.advance();
            }
        }
    }

    /// A plain scalar with its continuation lines; `true` if it spanned a line break.
    fn plain(&mut self) -> bool {
        let limit = self.indent() + 1;
        let mut leading_blanks = false;
        loop {
            if self.document_marker() || self.is(0, b'#') {
                break;
            }
            while !self.is_blankz(0) {
                let c = self.at(0);
                let next = self.at(1);
                let flow_indicator =
                    |c: Option<u8>| matches!(c, Some(b',' | b'[' | b']' | b'{' | b'}'));
                if (c == Some(b':')
                    && (self.is_blankz(1)
                        || (self.flow > 0 && (flow_indicator(next) || next == Some(b'?')))))
                    || (self.flow > 0 && flow_indicator(c))
                {
                    break;
                }
                self.advance();
            }
            if !(self.is_blank(0) || self.break_len(0) > 0) {
                break;
            }
            while self.is_blank(0) || self.break_len(0) > 0 {
                if self.is_blank(0) {
                    self.advance();
                } else {
                    self.skip_break();
                    leading_blanks = true;
                }
            }
            if self.flow == 0 && (self.col as isize) < limit {
                break;
            }
        }
        leading_blanks
    }

    /// A `|` or `>` block scalar: its header line, then every line indented
    /// past its parent (libyaml's rule, with its indentation detection).
    fn block_scalar(&mut self) {
        self.advance();
        let mut increment = 0;
        for _ in 0..2 {
            match self.at(0) {
                Some(b'+' | b'-') => self.advance(),
                Some(d @ b'1'..=b'9') if increment == 0 => {
                    increment = isize::from(d - b'0');
                    self.advance();
                }
                _ => break,
            }
        }
        while self.is_blank(0) {
            self.advance();
        }
        if self.is(0, b'#') {
            while !self.eof() && self.break_len(0) == 0 {
                self.advance();
            }
        }
        if self.break_len(0) == 0 {
            // libyaml refuses anything else after the header; read on as tokens.
            return;
        }
        self.skip_break();
        let parent = self.indent();
        let mut indent = if increment > 0 {
            if parent >= 0 {
                parent + increment
            } else {
                increment
            }
        } else {
            0
        };
        if !self.block_breaks(&mut indent, parent) {
            return;
        }
        while self.col as isize == indent && !self.eof() {
            while !self.eof() && self.break_len(0) == 0 {
                self.advance();
            }
            if self.eof() {
                return;
            }
            self.skip_break();
            if !self.block_breaks(&mut indent, parent) {
                return;
            }
        }
    }

    /// Indentation and empty lines inside a block scalar, fixing its
    /// indentation from the first line with text when the header did not;
    /// `false` where libyaml stops with an error.
    fn block_breaks(&mut self, indent: &mut isize, parent: isize) -> bool {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || (self.col as isize) < *indent) && self.is(0, b' ') {
                self.advance();
            }
            max_indent = max_indent.max(self.col as isize);
            if (*indent == 0 || (self.col as isize) < *indent) && self.is(0, b'\t') {
                return false;
            }
            if self.break_len(0) == 0 {
                break;
            }
            self.skip_break();
        }
        if *indent == 0 {
            *indent = max_indent.max(parent + 1).max(1);
        }
        true
    }
}

#[cfg(test)]
mod tests;
