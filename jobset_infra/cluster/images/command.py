"""`jobset-infra image build [NAME ...]`: the images, without a Docker daemon, reproducibly.

    jobset-infra image build                 # the controller image (make image)
    jobset-infra image build controller workload pause kueue
    jobset-infra image build controller -o jobset-controller.tar

Prints one line per image: its name, `repository@sha256:...` and the OCI archive it wrote. A
second build with the same inputs prints the cached result at once; `--rebuild` builds again
(the digest stays the same: that is the point).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from jobset_infra.cluster.images.spec import IMAGES

    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = sub.add_parser("build", help="build images into the cache and print their digests")
    build.add_argument("names", nargs="*", metavar="NAME", default=["controller"],
                       help=f"images to build: {', '.join(IMAGES)} (default: controller)")
    build.add_argument("--rebuild", action="store_true",
                       help="build again even when the cache has this image's inputs")
    build.add_argument("-o", "--output", type=Path, default=None, metavar="FILE",
                       help="also copy the OCI archive there (one image only)")
    build.add_argument("--digest-only", action="store_true",
                       help="print only repository@sha256:... per image (for scripts)")


def run(args: argparse.Namespace) -> int:
    from jobset_infra.cluster.binaries import MissingBinaryError
    from jobset_infra.cluster.images.build import build_image
    from jobset_infra.cluster.images.debian import ImageBuildError
    from jobset_infra.cluster.images.spec import IMAGES

    unknown = [n for n in args.names if n not in IMAGES]
    if unknown:
        print(f"jobset-infra image build: no image {unknown[0]!r}; choose from "
              f"{', '.join(IMAGES)}", file=sys.stderr)
        return 2
    if args.output is not None and len(args.names) != 1:
        print("jobset-infra image build: --output takes one image; name exactly one",
              file=sys.stderr)
        return 2

    def say(line: str) -> None:
        if not args.digest_only:
            print(f"[image] {line}", flush=True)

    try:
        for name in args.names:
            built = build_image(IMAGES[name], rebuild=args.rebuild, progress=say)
            if args.output is not None:
                shutil.copyfile(built.archive, args.output)
            if args.digest_only:
                print(built.by_digest)
                continue
            how = "cached" if built.cached else f"built in {built.seconds:.0f} s"
            where = args.output or built.archive
            print(f"{name:<11} {built.by_digest}  ({how}; OCI archive {where}, "
                  f"layout {built.layout})")
    except (ImageBuildError, MissingBinaryError) as err:
        print(f"jobset-infra image build: {err}", file=sys.stderr)
        return 1
    return 0
