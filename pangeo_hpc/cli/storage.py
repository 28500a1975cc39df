"""Verbs for storage: hydration, warmup, stage, survey."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pangeo_hpc.cli.common import Verb, add_s3_args, positive_int, s3_options_from
from pangeo_hpc.cli.progress import byte_progress as _byte_progress
from pangeo_hpc.errors import InputError


def _hydration_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")
    p.add_argument("--json", action="store_true", help="the full per-file report as JSON")
    p.add_argument("--files", action="store_true", help="one line per file")


def _hydration(a: argparse.Namespace) -> int:
    from pangeo_hpc.storage import hydration

    report = hydration(a.path)
    if a.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    if a.files:
        for f in report.files:
            print(f"{f.state:9s} {f.loaded:>14d} / {f.size:<14d} {f.path}")
    print(report.summary())
    return 0


def _warmup_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")
    p.add_argument("--workers", type=positive_int, help="parallel reads (default 8)")
    p.add_argument(
        "--hsm",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="use lfs hsm_restore (default: on Lustre as root)",
    )


def _warmup(a: argparse.Namespace) -> int:
    from pangeo_hpc.storage import warmup

    report = warmup(a.path, workers=a.workers, hsm=a.hsm, progress=_byte_progress("warmup"))
    print(report.summary())
    return 0 if not report.failed else 1


def _stage_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", help="s3://bucket/prefix or a folder")
    p.add_argument("dst", help="destination folder")
    p.add_argument("--threads", type=positive_int, default=8)
    add_s3_args(p)


def _stage(a: argparse.Namespace) -> int:
    from pangeo_hpc.s3.options import is_s3
    from pangeo_hpc.storage.stage import stage

    opts = s3_options_from(a, a.src)  # refuses --endpoint-url/--anon for a folder
    report = stage(
        a.src,
        a.dst,
        s3=opts if is_s3(a.src) else None,
        threads=a.threads,
        progress=_byte_progress("stage"),
    )
    print(report.summary())
    return 0 if not report.failed else 1


def _size_arg(text: str) -> str:
    from pangeo_hpc.inputs.sizes import parse_size

    try:
        parse_size(text, name="")
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _labelled(text: str) -> tuple[str, str]:
    """``LABEL=PATH`` as (label, path); a plain path (or one that exists as written) as
    (path, path). A label has no ``/``, so ``s3://b/k=v`` stays a path."""
    label, sep, path = text.partition("=")
    if sep and label and path and "/" not in label and not Path(text).exists():
        return label, path
    return text, text


def _output_file(text: str, flag: str, inputs: list[str], s3=None):
    """The file output ``text`` (a path or ``s3://bucket/key``), checked before the survey
    runs (:func:`pangeo_hpc.write.targets.check_output_file`)."""
    from pangeo_hpc.write.targets import check_output_file

    out = check_output_file(text, flag=flag, inputs=inputs, s3=s3)
    if isinstance(out, Path) and not out.parent.is_dir():
        raise InputError(
            f"folder {str(out.parent)!r} of {flag} {text!r} does not exist: create it or "
            "write to an existing folder"
        )
    return out


def _write_plot(results: list, out: Path) -> None:
    """The bar chart to ``out`` (whole or not at all, marked as ours); no pyplot."""
    from matplotlib.figure import Figure

    from pangeo_hpc.storage.survey import plot
    from pangeo_hpc.write.outputs import save_figure

    fig = Figure(figsize=(7, 1 + 0.6 * len(results)), layout="constrained")
    plot(results, fig.add_subplot())
    save_figure(fig, out, flag="--plot", dpi=150)


def _survey_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        nargs="+",
        metavar="[LABEL=]PATH",
        help="a folder, file or s3://BUCKET/PREFIX; LABEL= names it in the table, "
        "e.g. NFS=/home/era5",
    )
    p.add_argument(
        "--bytes",
        type=_size_arg,
        metavar="SIZE",
        help="read whole files per path until this many bytes, e.g. 500MiB "
        "(default: pangeo-hpc.storage.survey-bytes, 1GB)",
    )
    p.add_argument(
        "--threads",
        type=positive_int,
        metavar="N",
        help="reads in flight (default: pangeo-hpc.storage.survey-threads, 8)",
    )
    p.add_argument(
        "--block-size",
        type=_size_arg,
        metavar="SIZE",
        help="bytes per read or S3 GET (default: pangeo-hpc.storage.block-size, 16MiB)",
    )
    p.add_argument(
        "--warm",
        action="store_true",
        help="do not drop the page cache first (read what is cached as it is)",
    )
    p.add_argument(
        "--json", metavar="FILE", help="write the results as JSON to FILE (or s3://BUCKET/KEY)"
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="write a bar chart of MB/s, e.g. survey.png (or s3://BUCKET/KEY.png)",
    )
    add_s3_args(p)


def _survey(a: argparse.Namespace) -> int:
    from pangeo_hpc.storage.survey import survey, table
    from pangeo_hpc.write.outputs import write_json
    from pangeo_hpc.write.targets import output_file, suffix_of

    paths: dict[str, str] = {}
    for text in a.paths:
        label, path = _labelled(text)
        if label in paths:
            raise InputError(f"label {label!r} is given twice: name each path once")
        paths[label] = path
    read = list(paths.values())
    opts = s3_options_from(a, read, [a.json, a.plot])
    writes = opts.for_writing()
    json_out = _output_file(a.json, "--json", read, writes) if a.json else None
    plot_out = _output_file(a.plot, "--plot", read, writes) if a.plot else None
    if plot_out is not None:
        from matplotlib.figure import Figure

        formats = Figure().canvas.get_supported_filetypes()
        if suffix_of(plot_out)[1:] not in formats:
            raise InputError(
                f"--plot {a.plot!r} does not end in an image format matplotlib writes: "
                "end it in .png, .svg or .pdf"
            )

    results = survey(
        paths,
        max_bytes=a.bytes,
        threads=a.threads,
        block_size=a.block_size,
        cold=not a.warm,
        s3_options=opts,
    )
    print(table(results), end="")
    if json_out is not None:
        with output_file(json_out, flag="--json", inputs=read, s3=writes) as dest:
            write_json(dest, {"results": [r.to_dict() for r in results]}, flag="--json")
        print(f"written {json_out}")
    if plot_out is not None:
        with output_file(plot_out, flag="--plot", inputs=read, s3=writes) as dest:
            _write_plot(results, dest)
        print(f"written {plot_out}")
    return 0


VERBS = [
    Verb(
        "hydration",
        "how much of a tree is loaded on a lazily loading file system",
        "How much of a tree is loaded on a lazily loading file system (FSx for Lustre, "
        "rclone mount, any cache).",
        _hydration_args,
        _hydration,
    ),
    Verb(
        "warmup",
        "load lazily loaded files before a job reads them",
        "Load the bytes of lazily loaded files before a job reads them (read-through, or "
        "lfs hsm_restore on Lustre as root). Files that vanish or cannot be read are listed "
        "at the end with the reason, the others are warmed; the exit code is then 1.",
        _warmup_args,
        _warmup,
    ),
    Verb(
        "stage",
        "copy an S3 prefix or a folder onto Lustre or local disk",
        "Copy an S3 prefix or a folder to a Lustre or local folder in parallel (byte ranges, "
        "striping, resumable). Each file is checked against its source before it is put in "
        "place (its MD5 against the S3 ETag, or checksums re-read from disk), and the summary "
        "says which check each file passed.",
        _stage_args,
        _stage,
    ),
    Verb(
        "survey",
        "measure how fast storage paths read (MB/s)",
        "How fast each storage path reads (local disk, NFS, Lustre, a FUSE mount, S3): whole "
        "files in parallel threads, in large reads, with the page cache dropped first; a "
        "table of MB/s, and optionally JSON and a bar chart.",
        _survey_args,
        _survey,
    ),
]
