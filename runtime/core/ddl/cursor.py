"""A cursor over one statement's tokens: the DDL parsers' reading and positioned errors."""

from __future__ import annotations

from timeweave.core.ddl.script import Statement
from timeweave.core.errors import QuerySyntaxError
from timeweave.core.sql_tokens import Token, TokenType


class Cursor:
    """Reads a statement's tokens left to right; every error names the position it stopped at.

    >>> from timeweave.core.ddl.script import split_statements
    >>> c = Cursor(split_statements("CREATE TABLE t (a INT)")[0])
    >>> c.expect_word("CREATE"), c.accept_word("TEMPORARY"), c.expect_word("TABLE").text
    (Token(type=<TokenType.WORD: 1>, text='CREATE', start=0, end=6), None, 'TABLE')
    """

    def __init__(self, statement: Statement, start: int = 0, stop: int | None = None) -> None:
        self.statement = statement
        self.tokens = statement.tokens
        self.i = start
        self.stop = len(self.tokens) if stop is None else stop

    @property
    def script(self) -> str:
        return self.statement.script

    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.tokens[j] if j < self.stop else None

    def at_end(self) -> bool:
        return self.i >= self.stop

    def next(self, what: str) -> Token:
        token = self.peek()
        if token is None:
            raise self.error(f"expected {what}, found the end of the statement")
        self.i += 1
        return token

    def is_word(self, *words: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token is not None and token.type is TokenType.WORD and token.upper in words

    def is_symbol(self, symbol: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token is not None and token.type is TokenType.SYMBOL and token.text == symbol

    def accept_word(self, *words: str) -> Token | None:
        if self.is_word(*words):
            return self.next(words[0])
        return None

    def expect_word(self, *words: str) -> Token:
        if not self.is_word(*words):
            raise self.error(f"expected {' or '.join(words)}, found {self.describe()}")
        return self.next(words[0])

    def accept_symbol(self, symbol: str) -> Token | None:
        if self.is_symbol(symbol):
            return self.next(symbol)
        return None

    def expect_symbol(self, symbol: str) -> Token:
        if not self.is_symbol(symbol):
            raise self.error(f"expected '{symbol}', found {self.describe()}")
        return self.next(symbol)

    def expect(self, kind: TokenType, what: str) -> Token:
        token = self.peek()
        if token is None or token.type is not kind:
            raise self.error(f"expected {what}, found {self.describe()}")
        return self.next(what)

    def identifier(self, what: str = "a name") -> Token:
        """A word or a `quoted` identifier (its name is ``token.name``)."""
        token = self.peek()
        if token is None or token.type not in (TokenType.WORD, TokenType.QUOTED):
            raise self.error(f"expected {what}, found {self.describe()}")
        return self.next(what)

    def qualified_name(self, what: str = "a table name") -> tuple[str, Token]:
        """A dotted name (``db.t``, ```odd name```): its text as written and its first token."""
        first = self.identifier(what)
        end = first.end
        while self.is_symbol(".") and self.peek(1) is not None and self.peek(1).type in (TokenType.WORD, TokenType.QUOTED):
            self.i += 1
            end = self.next(what).end
        return self.script[first.start : end], first

    def balanced_end(self) -> int:
        """The index just past the ``)`` closing the ``(`` at the cursor (which must be one)."""
        open_token = self.peek()
        if open_token is None or open_token.type is not TokenType.LPAREN:
            raise self.error(f"expected '(', found {self.describe()}")
        depth = 0
        for j in range(self.i, self.stop):
            kind = self.tokens[j].type
            depth += kind is TokenType.LPAREN
            depth -= kind is TokenType.RPAREN
            if depth == 0:
                return j + 1
        raise QuerySyntaxError("unclosed '('", text=self.script, position=open_token.start)

    def describe(self) -> str:
        token = self.peek()
        return "the end of the statement" if token is None else repr(token.text)

    def position(self) -> int:
        token = self.peek()
        if token is not None:
            return token.start
        return self.tokens[self.stop - 1].end if self.stop else 0

    def error(self, message: str, token: Token | None = None) -> QuerySyntaxError:
        position = token.start if token is not None else self.position()
        return QuerySyntaxError(message, text=self.script, position=position)


__all__ = ["Cursor"]
