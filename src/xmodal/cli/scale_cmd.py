"""Scale-out commands: ``xmodal embed`` (Ray or one process -> Parquet shards) and
``xmodal ann build`` (FAISS index over shards, inverted lists merged on disk)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from xmodal.cli._app import app, console

ann_app = typer.Typer(help="Approximate nearest-neighbour index over embedding shards "
                      "(written by 'xmodal embed').", no_args_is_help=True)
app.add_typer(ann_app, name="ann")


def _progress(quiet: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, disable=quiet)


@app.command("embed")
def embed_command(
    src: str = typer.Argument(..., help="A folder of images (recursive), a .txt list of paths "
                              "or URIs, a .parquet with a 'path' column, or a URI (s3://...)."),
    out: Path = typer.Argument(..., help="Output folder: manifest.json + Parquet shards."),
    engine: str = typer.Option("local", "--engine", help="ray (Ray Data on a cluster) or "
                               "local (the same pipeline in this process)."),
    address: str = typer.Option(None, "--address", help="Ray cluster: 'auto' (this node's "
                                "cluster) or HOST:PORT; default: start Ray on this machine."),
    workers: int = typer.Option(2, "--workers", help="Encoder actors (each loads the model "
                                "once)."),
    cpus_per_worker: float | None = typer.Option(
        None, "--cpus-per-worker", help="Ray CPUs each encoder actor reserves (default: sized "
        "from the cluster, at most 1, leaving room on every node for decoding)."),
    threads: int = typer.Option(1, "--threads", help="ONNX Runtime threads per encoder."),
    model: str = typer.Option(None, "--model", help="Embedding model (default dual encoder)."),
    shard_size: int = typer.Option(1000, "--shard-size", help="Images per Parquet shard."),
    dtype: str = typer.Option("float16", "--dtype", help="float16 or float32 embeddings."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Embed every image of SRC into Parquet shards (path, sha1, model, embedding) under OUT.

    Unreadable images are recorded with their reason. Safe to kill: running the same command
    again keeps the finished shards and writes no duplicate.

    Examples:

      xmodal embed ~/Pictures photos.emb

      xmodal embed /data/images.txt photos.emb --engine ray --address auto --workers 8

      ray start --head --port 6379; xmodal embed ./photos out --engine ray --address auto
    """
    from xmodal.scale.embed import run_embed

    # Ray prints its workers' messages on stdout: keep stdout for the --json summary
    with _progress(quiet) as bar, contextlib.redirect_stdout(sys.stderr):
        task = bar.add_task("embedding", total=None)

        def on_plan(m, todo: int) -> None:
            bar.update(task, total=todo, description=f"embedding ({m.n_shards} shards)")

        summary = run_embed(src, out, engine=engine, address=address, workers=workers,
                            cpus_per_worker=cpus_per_worker, threads=threads, model_spec=model,
                            shard_size=shard_size, dtype=dtype, on_plan=on_plan,
                            on_shard=lambda s, n: bar.advance(task, n))
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    else:
        console.print(f"{summary['images']:,} images in {summary['shards']} shards under "
                      f"{out} ({summary['shards_written']} written now, "
                      f"{summary['shards_skipped_done']} already done; "
                      f"{summary['bad_in_written']} unreadable recorded); "
                      f"{summary['images_per_s']} images/s")


@ann_app.command("build")
def ann_build_command(
    paths: list[Path] = typer.Argument(..., help="Embedding folder(s) written by 'xmodal "
                                       "embed', then OUT, the index folder to write."),
    memory_budget: str = typer.Option("4GB", "--memory-budget", help="Size the index may take "
                                      "(chooses the code: SQ8, SQ4, or OPQ+PQ)."),
    factory: str = typer.Option(None, "--factory", help="FAISS factory string instead of the "
                                "automatic choice, e.g. 'IVF4096_HNSW32,SQ8'."),
    stage: list[str] = typer.Option(None, "--stage", help="Run only these stages (train, add, "
                                    "merge, eval, catalog; repeatable). Default: all."),
    jobs: int = typer.Option(1, "--jobs", help="Processes adding shards in parallel."),
    queries: int = typer.Option(200, "--queries", help="Held-out query sample for recall."),
    target_recall: float = typer.Option(0.9, "--target-recall", help="The default nprobe is "
                                        "the smallest reaching this recall@10."),
    time_limit: float = typer.Option(None, "--time-limit", help="Seconds after which the add "
                                     "stage starts no new shard (run again to go on)."),
    keep_blocks: bool = typer.Option(False, "--keep-blocks", help="Keep per-shard blocks."),
    as_json: bool = typer.Option(False, "--json", help="Print ann.json."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Build a FAISS index over embedding shards; inverted lists merged on disk (memory-mapped).

    Examples:

      xmodal ann build photos.emb photos.ann

      xmodal ann build part1.emb part2.emb photos.ann --memory-budget 8GB

      xmodal ann build photos.emb photos.ann --stage train --stage add --time-limit 900
    """
    from xmodal.errors import XmodalError
    from xmodal.scale.ann_build import STAGES, build_index

    if len(paths) < 2:
        raise XmodalError("give the embedding folder(s) and then OUT, the index folder")
    *folders, out = paths
    with _progress(quiet) as bar:
        task = bar.add_task("adding shards", total=None)
        meta = build_index(folders, out, memory_budget=memory_budget, factory=factory,
                           stages=tuple(stage) if stage else STAGES, jobs=jobs, queries=queries,
                           target_recall=target_recall, time_limit=time_limit,
                           keep_blocks=keep_blocks,
                           progress=lambda d, n: bar.update(task, completed=d, total=n))
    if as_json:
        typer.echo(json.dumps({k: v for k, v in meta.items() if k != "offsets"}, indent=2))
        return
    chosen = meta.get("eval", {}).get("chosen")
    console.print(f"{meta['vectors']:,} vectors, {meta['factory']} ({meta['why']})")
    if chosen:
        console.print(f"recall@{meta['eval']['k']} {chosen['recall_at_k']} at nprobe "
                      f"{chosen['nprobe']} ({chosen['ms_per_query']} ms a query) on "
                      f"{meta['eval']['queries']} held-out queries")
    elif not (out / "index.faiss").is_file():
        console.print("[yellow]not finished:[/] run the same command again to go on")
