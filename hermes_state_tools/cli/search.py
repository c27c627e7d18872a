"""`hermes-state search`: read-only full-text search."""

from __future__ import annotations

import difflib
import sys
from typing import Any

import click

from hermes_state_tools.cli import helptext, main, render
from hermes_state_tools.cli.base import EXIT_PROBLEMS, common_options, emit, fail, settings, when
from hermes_state_tools.search.sanitize import has_terms
from hermes_state_tools.views.search import search_report

ROLES = ("user", "assistant", "tool", "system")


def _human(doc: dict[str, Any]) -> str:
    literal = (f"(no whole-word match: literal text looked for in the newest {doc['literal_among']:,} messages)"
               if doc["literal_among"] else None)
    if not doc["results"]:
        return "no matches" + (f" {literal}" if literal else "")
    colour = render.use_colour()
    lines = [literal] if literal else []
    if doc["ranked_among"]:
        lines.append(f"(a common query: best of the newest {doc['ranked_among']:,} matches)")
    for hit in doc["results"]:
        lines.append(f"{hit['session_id']}  {when(hit['timestamp'])}  {hit['source']}  "
                     f"{render.role(hit['role'], colour)}")
        lines.append("    " + render.highlight(" ".join(str(hit["snippet"] or "").split()), colour))
    return "\n".join(lines)


class SearchCommand(helptext.Command):
    """A query may start with `-` (`search -build`): only this command's own options are options."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        params = [p for p in self.get_params(ctx) if isinstance(p, click.Option)]
        options = {name for p in params for name in p.opts}
        valued = {name for p in params if not p.is_flag for name in p.opts}
        rewritten: list[str] = []
        for index, arg in enumerate(args):
            if arg == "--":
                rewritten += args[index:]
                break
            after_option = bool(rewritten) and rewritten[-1] in valued
            if arg.startswith("-") and len(arg) > 1 and arg.split("=", 1)[0] not in options and not after_option:
                if arg.startswith("--"):  # a mistyped option, not text
                    word = arg.split("=", 1)[0]
                    close = difflib.get_close_matches(word, sorted(options), n=2)
                    raise click.NoSuchOption(word, possibilities=close, ctx=ctx)
                arg = _QUERY_MARK + arg
            rewritten.append(arg)
        return super().parse_args(ctx, rewritten)


# A query word that starts with `-` is carried past click's option parser with this mark in front.
_QUERY_MARK = "\x1f"


@main.command(cls=SearchCommand)
@click.argument("words", nargs=-1, required=True, metavar="QUERY")
@click.option("--source", "sources", multiple=True, metavar="NAME",
              help="Only sessions of this source (repeatable); an unknown source is an error listing the known.")
@click.option("--role", "roles", multiple=True, type=click.Choice(ROLES),
              help="Only messages of this role (repeatable).")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000),
              help="Show at most this many matches.")
@click.option("--all", "show_all", is_flag=True,
              help="Also find what Hermes leaves out of search: rewound messages (a later Hermes' files).")
@common_options()
def search(words: tuple[str, ...], sources: tuple[str, ...], roles: tuple[str, ...], limit: int,
           show_all: bool, as_json: bool) -> None:
    """Full-text search over every message, best matches first, with snippets.

    \b
    What a query can say (the same rules for Latin and CJK text):
      disk usage        both words, whole words (AND is implied)
      deploy*           a word starting with deploy
      "disk usage"      the exact phrase
      nginx OR apache   either; NOT excludes (nginx NOT test); (a OR b) c groups
      東京 nginx        each CJK run is a term, in any order with the others,
                        and matches anywhere in the text, of any length;
                        "東京の天気" is one substring; a word gluing Latin
                        to CJK (Agent通信) matches as typed
      -build, C++       punctuation is searched as text; a query may start
                        with a hyphen (or: hermes-state search -- -build)
    CJK matches come newest first; Latin-only queries are ranked by relevance. On a later
    Hermes' file, what that Hermes leaves out of search (rewound messages) is left out here
    too, and --all finds it; messages compacted away are found, as Hermes finds them.

    A query matching more than 2,000 messages (a common word, prefix or phrase) is ranked among
    its 2,000 most recent matches only, so it answers in milliseconds at any size; --json then reports
    "ranked_among": 2000 (null when every match was ranked). When no message holds the words as
    whole words, they are looked for as literal text in the 50,000 most recent messages (a store
    that holds more reports "literal_among": 50000).

    Exit status as grep's: 0 when something matched, 1 when nothing did (--json still prints its
    document, with "results": []), 2 and above for errors.

    \b
    Examples:
      hermes-state search "disk usage"
      hermes-state search 東京 OR 大阪 --role user
      hermes-state search deploy* --source telegram --role assistant --json
    """
    query = " ".join(word.removeprefix(_QUERY_MARK) for word in words)
    if not has_terms(query):  # "no matches" would say the file lacks what the query never asked for
        fail(f"search: the query {query!r} holds nothing to search for: a word, a \"phrase\" or a prefix* "
             "(hermes-state search --help)")
    report = search_report(settings().db, query, list(sources) or None, list(roles) or None, limit, show_all)
    emit(report.as_dict(), _human)
    if not report.results:  # nothing found: exit 1, so that `if hermes-state search ...` reads as with grep
        sys.exit(EXIT_PROBLEMS)
