"""``tjui cache info|clear``: the persistent analysis cache (token counts, results)."""

from __future__ import annotations

import click

from tinyjuice.cache import AnalysisCache, cache_dir, cache_disabled, default_cache
from tjui.clikit import emit_json


def _cache() -> AnalysisCache:
    # Even with TJUI_NO_CACHE set, info and clear look at the cache that is there.
    return default_cache() or AnalysisCache(cache_dir())


@click.group("cache")
def cache_group() -> None:
    """The analysis cache: exact token counts and results kept between runs.

    In the user cache directory ($TJUI_CACHE_DIR overrides it); TJUI_NO_CACHE=1 turns
    it off; TJUI_CACHE_MAX_MB bounds it (least recently used entries go first).
    """


@cache_group.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info_cmd(as_json: bool) -> None:
    """Where the cache is, its size and how many files and results it holds."""
    cache = _cache()
    data = cache.info()
    data["enabled"] = not cache_disabled() and data["problem"] is None
    cache.close()
    if as_json:
        emit_json(data)
        return
    mb = 1024 * 1024
    click.echo(f"cache      {data['path']}")
    if data["enabled"]:
        enabled = "yes"
    elif cache_disabled():
        enabled = "no (TJUI_NO_CACHE)"
    else:
        enabled = f"no: {data['problem']} (every command works without it)"
    click.echo(f"enabled    {enabled}")
    click.echo(f"version    {data['version']}")
    click.echo(
        f"size       {data['file_bytes'] / mb:.1f} MB on disk,"
        f" {data['entry_bytes'] / mb:.1f} MB of entries (limit {data['max_bytes'] / mb:.0f} MB)"
    )
    click.echo(f"entries    {data['files']} files counted, {data['results']} results")
    if data["stale"]:
        click.echo(f"stale      {data['stale']} from another version (reclaimed on the next write)")


@cache_group.command("clear")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def clear_cmd(as_json: bool) -> None:
    """Delete every entry of the cache."""
    cache = _cache()
    removed = cache.clear()
    cache.close()
    if as_json:
        emit_json({"path": str(cache.path), "removed": removed})
        return
    click.echo(f"cleared {cache.path}: {removed} entries removed")
