"""Jars that let a local PySpark talk to an Iceberg catalog offline (no Maven).

The Iceberg Spark runtime shipped in the PyPI wheel ``snowpark-connect-deps-iceberg``
(``iceberg-spark-runtime-3.5_2.12-1.10.2.jar``) references relocated classes it does not
contain: ``org.apache.iceberg.shaded.com.fasterxml.jackson.*`` and
``org.apache.iceberg.shaded.org.apache.hc.*`` (httpclient5 / httpcore5). The first REST call
then fails with ``NoClassDefFoundError``.

:func:`ensure_spark_jars` builds a "shim" jar that supplies those classes, from:

* Debian's httpclient5, httpcore5 and httpcore5-h2 jars (``/usr/share/java``);
* pyspark's own Jackson 2.15.2 jars (core, databind, annotations, datatype-jsr310);
* a one-interface stub ``org.apache.hc.client5.http.ssl.TlsSocketStrategy`` (it only exists in
  httpclient5 >= 5.4, which Iceberg 1.10.2 links against), compiled with ``javac --release 8``;

all relocated with Debian's jarjar. :func:`missing_classes` checks the result by reading the
constant pools of the class files: the bar is zero unresolved shaded classes.

:func:`ensure_s3a_jars` supplies S3A for ``s3://`` warehouses (no PyPI package ships Iceberg's
``iceberg-aws-bundle``): ``hadoop-aws-3.3.1.jar`` and ``aws-java-sdk-bundle-1.11.901.jar`` from the
``sagemaker-pyspark==1.4.5`` sdist. That package pins ``pyspark==3.3.0``, so it is never installed:
``pip download`` fetches the sdist and the two jars are extracted into the cache.

Run ``python tests/e2e/spark_jars.py`` to build the jars and print the check.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = [
    "RUNTIME_JAR_NAME",
    "SHIM_JAR_NAME",
    "ensure_s3a_jars",
    "ensure_spark_jars",
    "missing_classes",
    "pyspark_jars",
    "runtime_jar",
]

RUNTIME_JAR_NAME = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
# Bump the suffix whenever the recipe below changes, so stale caches are rebuilt.
SHIM_JAR_NAME = "iceberg-1.10.2-shaded-deps-shim-v1.jar"

DEFAULT_CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "spark-jars"
SHADED_PREFIX = "org/apache/iceberg/shaded/"

S3A_SDIST = "sagemaker-pyspark==1.4.5"
S3A_JAR_NAMES = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")

_JAVA_DIR = Path("/usr/share/java")
# Debian jar -> the package that ships it.
_DEBIAN_JARS: dict[str, str] = {
    "httpclient5.jar": "libhttpclient5-java",
    "httpcore5.jar": "libhttpcore5-java",
    "httpcore5-h2.jar": "libhttpcore5-java",
    "jarjar.jar": "libjarjar-java",
}
_JACKSON_JARS = (
    "jackson-core-2.15.2.jar",
    "jackson-databind-2.15.2.jar",
    "jackson-annotations-2.15.2.jar",
    "jackson-datatype-jsr310-2.15.2.jar",
)
_JARJAR_RULES = (
    "rule org.apache.hc.** org.apache.iceberg.shaded.org.apache.hc.@1\n"
    "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"
)

_STUB_CLASS = "org/apache/hc/client5/http/ssl/TlsSocketStrategy"
# Same shape as httpclient5 5.4's interface. Iceberg 1.10.2 only passes instances around
# (PoolingHttpClientConnectionManagerBuilder.setTlsSocketStrategy); nothing calls upgrade().
# That setter is absent from httpclient5 5.2, so a catalog that sets
# ``rest.client.tls.configurer-impl`` fails with NoSuchMethodError; plain http:// and https://
# URIs (system TLS defaults) do not take that path.
_STUB_SOURCE = """\
package org.apache.hc.client5.http.ssl;

import java.io.IOException;
import java.net.Socket;
import javax.net.ssl.SSLSocket;
import org.apache.hc.core5.http.protocol.HttpContext;

/** Stub of the httpclient5 5.4 interface, absent from the httpclient5 5.2 jar used here. */
public interface TlsSocketStrategy {
    SSLSocket upgrade(Socket socket, String target, int port, Object attachment,
                      HttpContext context) throws IOException;
}
"""


def _package_dir(module: str) -> Path:
    """Directory of an installed package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"Python package {module!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def runtime_jar() -> Path:
    """The Iceberg Spark runtime jar shipped by ``snowpark-connect-deps-iceberg``."""
    jar = _package_dir("snowpark_connect_deps_iceberg") / "jars" / RUNTIME_JAR_NAME
    if not jar.is_file():
        raise RuntimeError(f"{jar} not found: reinstall snowpark-connect-deps-iceberg")
    return jar


def pyspark_jars() -> list[Path]:
    """All jars shipped inside the installed ``pyspark`` package."""
    return sorted((_package_dir("pyspark") / "jars").glob("*.jar"))


def _debian_jars() -> dict[str, Path]:
    """Debian jars the build needs; raise with the apt-get command if any is absent."""
    found = {name: _JAVA_DIR / name for name in _DEBIAN_JARS}
    missing = sorted({_DEBIAN_JARS[n] for n, path in found.items() if not path.is_file()})
    if missing:
        raise RuntimeError(
            f"missing {', '.join(n for n, p in found.items() if not p.is_file())} in {_JAVA_DIR}; "
            f"run: apt-get install -y {' '.join(missing)}"
        )
    return found


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name!r} not on PATH; run: apt-get install -y openjdk-17-jdk-headless")
    return path


def ensure_spark_jars(cache_dir: Path | None = None) -> list[Path]:
    """Return ``[runtime_jar, shim_jar]`` for ``spark.jars``, building the shim if needed.

    The shim is cached as ``<cache_dir>/SHIM_JAR_NAME`` (default ``<repo>/.cache/spark-jars``)
    and only rebuilt when absent. It is built in a private temporary directory inside
    ``cache_dir`` and moved into place with an atomic rename, so concurrent callers never see
    a partial file (if two race, both build and the last rename wins with an identical jar).
    """
    runtime = runtime_jar()
    cache = (cache_dir or DEFAULT_CACHE_DIR).resolve()
    shim = cache / SHIM_JAR_NAME
    if shim.is_file():
        return [runtime, shim]

    debian = _debian_jars()
    jackson_dir = _package_dir("pyspark") / "jars"
    jackson = [jackson_dir / name for name in _JACKSON_JARS]
    absent = [str(j) for j in jackson if not j.is_file()]
    if absent:
        raise RuntimeError(f"pyspark does not ship the expected Jackson jars: {absent}")
    java, javac = _tool("java"), _tool("javac")

    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=cache) as tmp_name:
        tmp = Path(tmp_name)
        inputs = [
            debian["httpclient5.jar"],
            debian["httpcore5.jar"],
            debian["httpcore5-h2.jar"],
        ]
        inputs += jackson
        if not any(_has_entry(jar, _STUB_CLASS + ".class") for jar in inputs):
            inputs.append(_compile_stub(javac, debian["httpcore5.jar"], tmp))
        merged = tmp / "merged.jar"
        _merge_jars(inputs, merged)
        rules = tmp / "rules.txt"
        rules.write_text(_JARJAR_RULES, encoding="ascii")
        out = tmp / SHIM_JAR_NAME
        _run(
            [
                java,
                "-jar",
                str(debian["jarjar.jar"]),
                "process",
                str(rules),
                str(merged),
                str(out),
            ]
        )
        expected = SHADED_PREFIX + "org/apache/hc/core5/http/Method.class"
        if not _has_entry(out, expected):
            raise RuntimeError(f"jarjar output {out} lacks {expected}")
        os.replace(out, shim)
    return [runtime, shim]


def ensure_s3a_jars(cache_dir: Path | None = None) -> list[Path]:
    """Return ``[hadoop-aws, aws-java-sdk-bundle]`` for ``spark.jars``, fetching them if needed.

    Both come from the ``S3A_SDIST`` sdist (``deps/jars/``), downloaded with pip (no install, no
    dependencies) into a private temporary directory; each jar is moved into ``cache_dir`` with an
    atomic rename. Raises RuntimeError when the sdist cannot be fetched.
    """
    cache = (cache_dir or DEFAULT_CACHE_DIR).resolve()
    jars = [cache / name for name in S3A_JAR_NAMES]
    if all(jar.is_file() for jar in jars):
        return jars
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".s3a-", dir=cache) as tmp_name:
        tmp = Path(tmp_name)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
        _run([*pip, "--dest", str(tmp), S3A_SDIST])
        (sdist,) = tmp.glob("*.tar.gz")
        with tarfile.open(sdist) as archive:
            members = {Path(m.name).name: m for m in archive.getmembers() if "/deps/jars/" in m.name}
            for jar in jars:
                member = members.get(jar.name)
                source = archive.extractfile(member) if member is not None else None
                if source is None:
                    raise RuntimeError(f"{sdist.name} does not ship deps/jars/{jar.name}")
                part = tmp / jar.name
                with source, part.open("wb") as out:
                    shutil.copyfileobj(source, out)
                os.replace(part, jar)
    return jars


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd!r} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")


def _has_entry(jar: Path, name: str) -> bool:
    with zipfile.ZipFile(jar) as zf:
        try:
            zf.getinfo(name)
        except KeyError:
            return False
        return True


def _compile_stub(javac: str, httpcore5: Path, tmp: Path) -> Path:
    """Compile the TlsSocketStrategy stub for Java 8 and return a directory-less jar of it."""
    src = tmp / "stub-src" / (_STUB_CLASS + ".java")
    src.parent.mkdir(parents=True)
    src.write_text(_STUB_SOURCE, encoding="ascii")
    classes = tmp / "stub-classes"
    _run(
        [
            javac,
            "--release",
            "8",
            "-nowarn",
            "-cp",
            str(httpcore5),
            "-d",
            str(classes),
            str(src),
        ]
    )
    jar = tmp / "stub.jar"
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(classes / (_STUB_CLASS + ".class"), _STUB_CLASS + ".class")
    return jar


def _merge_jars(jars: Iterable[Path], out: Path) -> None:
    """Copy classes and resources (not META-INF, not module-info) into one jar; first wins."""
    seen: set[str] = set()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for jar in jars:
            with zipfile.ZipFile(jar) as src:
                for info in src.infolist():
                    name = info.filename
                    if (
                        info.is_dir()
                        or name.startswith("META-INF/")
                        or name.endswith("module-info.class")
                        or name in seen
                    ):
                        continue
                    seen.add(name)
                    dst.writestr(name, src.read(info))


# --- class-reference scan -------------------------------------------------------------------

# Constant-pool entry sizes (bytes after the tag) for fixed-size tags.
_CP_SIZES = {
    3: 4,
    4: 4,
    5: 8,
    6: 8,
    7: 2,
    8: 2,
    9: 4,
    10: 4,
    11: 4,
    12: 4,
    15: 3,
    16: 2,
}
_CP_SIZES.update({17: 4, 18: 4, 19: 2, 20: 2})
_DESCRIPTOR_CLASS = re.compile(r"L([^;<>]+);")
_VERSIONED = re.compile(r"^META-INF/versions/\d+/")


def _class_refs(data: bytes) -> Iterator[str]:
    """Internal names of classes a class file links against (its constant pool).

    Yields CONSTANT_Class names (array types unwrapped) and class types in the descriptors
    of CONSTANT_NameAndType and CONSTANT_MethodType entries.
    """
    if data[:4] != b"\xca\xfe\xba\xbe":
        return
    (count,) = struct.unpack_from(">H", data, 8)
    utf8: dict[int, str] = {}
    names: list[int] = []
    descriptors: list[int] = []
    pos, index = 10, 1
    while index < count:
        tag = data[pos]
        if tag == 1:
            (length,) = struct.unpack_from(">H", data, pos + 1)
            utf8[index] = data[pos + 3 : pos + 3 + length].decode("utf-8", "replace")
            pos += 3 + length
        else:
            if tag == 7:
                names.append(struct.unpack_from(">H", data, pos + 1)[0])
            elif tag == 12:
                descriptors.append(struct.unpack_from(">H", data, pos + 3)[0])
            elif tag == 16:
                descriptors.append(struct.unpack_from(">H", data, pos + 1)[0])
            pos += 1 + _CP_SIZES[tag]
        index += 2 if tag in (5, 6) else 1
    for i in names:
        name = utf8[i]
        if name.startswith("["):
            yield from _DESCRIPTOR_CLASS.findall(name)
        else:
            yield name
    for i in descriptors:
        yield from _DESCRIPTOR_CLASS.findall(utf8[i])


def _class_names(jar: Path) -> Iterator[str]:
    with zipfile.ZipFile(jar) as zf:
        for name in zf.namelist():
            if name.endswith(".class"):
                yield _VERSIONED.sub("", name)[: -len(".class")]


def missing_classes(
    jars: list[Path],
    prefix: str = SHADED_PREFIX,
    providers: list[Path] | None = None,
) -> set[str]:
    """Classes under ``prefix`` referenced from ``jars`` but defined nowhere.

    Every class file in ``jars`` is scanned (the runtime jar and the shim: the shim's own
    references must resolve too). A reference counts as provided when a class file of that
    name is in ``jars`` or in ``providers`` (default: pyspark's jars). Returns dotted names;
    empty means every ``prefix`` reference links.
    """
    provided: set[str] = set()
    for jar in [*jars, *(pyspark_jars() if providers is None else providers)]:
        provided.update(_class_names(jar))
    needle = prefix.encode()
    referenced: set[str] = set()
    for jar in jars:
        with zipfile.ZipFile(jar) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".class"):
                    continue
                data = zf.read(info)
                if needle in data:
                    referenced.update(r for r in _class_refs(data) if r.startswith(prefix))
    return {name.replace("/", ".") for name in referenced - provided}


def main() -> int:
    """Build (or reuse) the jars, print their paths and the count of missing classes."""
    jars = ensure_spark_jars()
    for jar in jars:
        print(jar)
    missing = missing_classes(jars)
    for name in sorted(missing):
        print(f"missing: {name}")
    print(f"missing classes: {len(missing)}")
    for jar in ensure_s3a_jars():
        print(jar)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
