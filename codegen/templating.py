"""One Jinja2 environment for every emitted file: templates ship inside the package."""

from __future__ import annotations

from functools import cache

import jinja2

from rip.codegen.cformat import FILTERS
from rip.core.operators import Op


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rip", "templates"),
        undefined=jinja2.StrictUndefined,  # a missing variable is a bug, not an empty string
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    env.globals["Op"] = Op  # templates name op kinds as the operator table does (Op.QUANTIZE)
    return env


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)
