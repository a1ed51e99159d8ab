"""Iceberg's REST Compatibility Kit (RCK), ported to pytest, driving the real Iceberg Java client.

The RCK (``open-api/.../RESTCompatibilityKitSuite``) runs Iceberg's ``CatalogTests`` and
``ViewCatalogTests`` against a ``RESTCatalog``. Here the same ``org.apache.iceberg.rest.RESTCatalog``
(Iceberg 1.10.2, from the Spark JVM, through py4j) is configured exactly as ``RCKUtils`` does and each
Java test method is ported one to one (same name, same steps, same expected exception classes and
messages), with these flags: requires-namespace-create=true, supports-serverside-retry=true,
overrides-requested-location=false, nested namespaces and names with dots supported.

Differences from the Java suite:

* Each test gets unique namespace names: the RCK's ``ns``, ``newdb``, ``ns1``... become ``ns_<uid>``
  and so on, and the expected messages are built from those names.
* Not ported: the [empty-ns], [slash] and [variant] cases (disabled for this server, as in the RCK),
  ``createTableInUniqueLocation`` (@Disabled in the RCK) and ``testCatalogWithCustomMetricsReporter``
  (it needs a custom Java MetricsReporter class on the client's classpath).
* The Java 1.10.2 client has no ``registerView``: the register-view cases send the same REST request
  with httpx and check the error the Java client would map (type, code, message).
* ``ExpireSnapshots.CleanupLevel`` is newer than 1.10.2: ``cleanupLevel(NONE)`` is ``cleanExpiredFiles(false)``.
* The 1.10.2 client sends request bodies as ISO-8859-1 (``new StringEntity(body)``, apache/iceberg#17646),
  so the RCK's column doc ``unique ID 🤪`` reaches every server as ``unique ID ?``. Schema assertions
  compare with the doc as the client can send it; ``test_unicode_column_doc_round_trip`` keeps the
  original assertion as a strict xfail; ``test_latin1_text_from_the_java_client`` (not an RCK case)
  checks that what that client can send (ISO-8859-1, not UTF-8) is read correctly.
"""

from __future__ import annotations

import builtins
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

import httpx
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException

from tests.support.server import ProxyProcess

pytestmark = pytest.mark.spark

CATALOG_NAME = "rck_catalog"
DOC = "unique ID 🤪"
# What the 1.10.2 client actually transmits: it encodes request bodies as ISO-8859-1 (apache/iceberg#17646).
WIRE_DOC = DOC.encode("latin-1", "replace").decode("latin-1")

RCK_PROPERTIES = {
    "table-default.default-key1": "catalog-default-key1",
    "table-default.default-key2": "catalog-default-key2",
    "table-default.override-key3": "catalog-default-key3",
    "table-override.override-key3": "catalog-override-key3",
    "table-override.override-key4": "catalog-override-key4",
    "view-default.key1": "catalog-default-key1",
    "view-default.key2": "catalog-default-key2",
    "view-default.key3": "catalog-default-key3",
    "view-override.key3": "catalog-override-key3",
    "view-override.key4": "catalog-override-key4",
}


# Java plumbing ---------------------------------------------------------------------------------
class Java:
    """Iceberg Java classes in the Spark JVM, plus the constants of CatalogTests and ViewCatalogTests."""

    def __init__(self, spark: Any) -> None:
        self.jvm = spark.sparkContext._jvm
        self.gateway = spark.sparkContext._gateway
        self.hadoop_conf = spark._jsc.hadoopConfiguration()
        ice = self.jvm.org.apache.iceberg
        self.ice = ice
        self.Types = ice.types.Types
        self.Expressions = ice.expressions.Expressions
        self.PartitionSpec = ice.PartitionSpec
        self.SortOrder = ice.SortOrder
        self.DataFiles = ice.DataFiles
        self.TableIdentifier = ice.catalog.TableIdentifier
        self.Namespace = ice.catalog.Namespace
        self.Lists = self.jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists
        integer, string = self.Types.IntegerType.get(), self.Types.StringType.get()
        required = self.Types.NestedField.required

        # CatalogTests
        self.SCHEMA = self.schema(required(3, "id", integer, DOC), required(4, "data", string))
        self.TABLE_SCHEMA = self.schema(required(1, "id", integer, WIRE_DOC), required(2, "data", string))
        self.REPLACE_SCHEMA = self.schema(required(2, "id", integer, WIRE_DOC), required(3, "data", string))
        self.OTHER_SCHEMA = self.schema(required(1, "some_id", integer))
        self.SPEC = self.PartitionSpec.builderFor(self.SCHEMA).bucket("id", 16).build()
        self.TABLE_SPEC = self.PartitionSpec.builderFor(self.TABLE_SCHEMA).bucket("id", 16).build()
        self.REPLACE_SPEC = self.PartitionSpec.builderFor(self.REPLACE_SCHEMA).bucket("id", 16).withSpecId(1).build()
        self.WRITE_ORDER = self.order(self.SCHEMA)
        self.TABLE_WRITE_ORDER = self.order(self.TABLE_SCHEMA)
        self.REPLACE_WRITE_ORDER = self.order(self.REPLACE_SCHEMA)
        self.FILE_A = self.data_file(self.SPEC, "/path/to/data-a.parquet", "id_bucket=0")
        self.FILE_B = self.data_file(self.SPEC, "/path/to/data-b.parquet", "id_bucket=1")
        self.FILE_C = self.data_file(self.SPEC, "/path/to/data-c.parquet", "id_bucket=2")

        # ViewCatalogTests
        self.VIEW_SCHEMA = self.schema(required(3, "id", integer, "unique ID"), required(4, "data", string), id=5)
        self.VIEW_OTHER_SCHEMA = self.schema(required(1, "some_id", integer), id=7)

    def array(self, java_class: Any, items: list[Any]) -> Any:
        array = self.gateway.new_array(java_class, len(items))
        for i, item in enumerate(items):
            array[i] = item
        return array

    def strings(self, *items: str) -> Any:
        return self.array(self.jvm.java.lang.String, list(items))

    def list(self, *items: Any) -> Any:
        result = self.jvm.java.util.ArrayList()
        for item in items:
            result.add(item)
        return result

    def map(self, entries: dict[str, str]) -> Any:
        result = self.jvm.java.util.HashMap()
        for key, value in entries.items():
            result.put(key, value)
        return result

    def set(self, *items: str) -> Any:
        result = self.jvm.java.util.HashSet()
        for item in items:
            result.add(item)
        return result

    def schema(self, *fields: Any, id: int | None = None) -> Any:
        columns = self.list(*fields)
        return self.ice.Schema(columns) if id is None else self.ice.Schema(id, columns)

    def order(self, schema: Any) -> Any:
        return self.SortOrder.builderFor(schema).asc(self.Expressions.bucket("id", 16)).asc("id").build()

    def asc(self, builder: Any, term: Any) -> Any:
        """``builder.asc(term)``. py4j cannot call SortOrderBuilder's default methods on the non-public
        BaseReplaceSortOrder, so call what they call: ``asc(term, NULLS_FIRST)`` (a name becomes a ref)."""
        term = self.Expressions.ref(term) if isinstance(term, str) else term
        return builder.asc(term, self.ice.NullOrder.NULLS_FIRST)

    def data_file(self, spec: Any, path: str, partition: str | None = None) -> Any:
        builder = self.DataFiles.builder(spec).withPath(path).withFileSizeInBytes(10)
        if partition is not None:
            builder = builder.withPartitionPath(partition)
        return builder.withRecordCount(2).build()

    def namespace(self, *levels: str) -> Any:
        return self.Namespace.of(self.strings(*levels))

    def sql(self, dialect: str, sql: str) -> Any:
        return self.ice.view.ImmutableSQLViewRepresentation.builder().sql(sql).dialect(dialect).build()

    def view_version(
        self,
        like: Any,
        version_id: int,
        schema_id: int,
        namespace: Any,
        representations: builtins.list[Any],
        default_catalog: str | None = None,
    ) -> Any:
        """ImmutableViewVersion.builder() with timestamp and summary taken from ``like``, as the RCK does."""
        builder = (
            self.ice.view.ImmutableViewVersion.builder()
            .timestampMillis(like.timestampMillis())
            .versionId(version_id)
            .schemaId(schema_id)
            .summary(like.summary())
            .defaultNamespace(namespace)
        )
        if default_catalog is not None:
            builder = builder.defaultCatalog(default_catalog)
        for representation in representations:
            builder = builder.addRepresentations(representation)
        return builder.build()

    def class_names(self, obj: Any) -> builtins.list[str]:
        names = []
        cls = obj.getClass()
        while cls is not None:
            names.append(str(cls.getSimpleName()))
            cls = cls.getSuperclass()
        return names

    def to_list(self, iterable: Any) -> builtins.list[Any]:
        return list(self.Lists.newArrayList(iterable))

    # CatalogTests helpers --------------------------------------------------------------------
    def file_locations(self, table: Any) -> builtins.list[str]:
        tasks = table.newScan().planFiles()
        try:
            return [str(task.file().location()) for task in self.Lists.newArrayList(tasks)]
        finally:
            tasks.close()

    def assert_files(self, table: Any, *files: Any) -> None:
        paths = self.file_locations(table)
        assert len(paths) == len(files), "Should contain expected number of data files"
        assert set(paths) == {str(f.location()) for f in files}, "Should contain correct file paths"

    def assert_no_files(self, table: Any) -> None:
        assert self.file_locations(table) == [], "Should contain no files"

    def file_spec_ids(self, table: Any) -> dict[str, int]:
        tasks = table.newScan().planFiles()
        try:
            return {str(t.file().location()): int(t.file().specId()) for t in self.Lists.newArrayList(tasks)}
        finally:
            tasks.close()

    def assert_file_partition_spec(self, table: Any, data_file: Any, spec_id: int) -> None:
        for location, found in self.file_spec_ids(table).items():
            if location == str(data_file.location()):
                assert found == spec_id, "Spec ID should match"

    def assert_files_partition_spec(self, table: Any) -> None:
        expected = table.spec().specId()
        assert all(found == expected for found in self.file_spec_ids(table).values()), "Spec ID should match"

    def assert_uuids_match(self, expected: Any, actual: Any) -> None:
        assert actual.operations().current().uuid() == expected.operations().current().uuid(), (
            "Table UUID should not change"
        )

    def assert_previous_metadata_file_count(self, table: Any, count: int) -> None:
        assert table.operations().current().previousFiles().size() == count, (
            "Table should have correct number of previous metadata locations"
        )

    def metadata_file_locations(self, table: Any) -> builtins.set[str]:
        return {str(x) for x in self.ice.ReachableFileUtil.metadataFileLocations(table, False)}

    def format_version(self, table: Any) -> int:
        return int(self.ice.TableUtil.formatVersion(table))


def thrown(java: Java, action: Callable[[], Any], exception: str) -> str:
    """Run ``action``; it must throw a Java exception that is an instance of ``exception`` (simple
    class name, superclasses count, as AssertJ's isInstanceOf). Returns the exception's message."""
    with pytest.raises((Py4JJavaError, CapturedException)) as info:
        action()
    # PySpark turns some Java exceptions (IllegalArgumentException...) into CapturedException
    raised = info.value
    error = raised.java_exception if isinstance(raised, Py4JJavaError) else raised._origin
    names = java.class_names(error)
    message = str(error.getMessage())
    assert exception in names, f"expected {exception}, got {names[0]}: {message}"
    return message


def same_elements(actual: Any, expected: list[Any]) -> bool:
    """AssertJ's containsExactlyInAnyOrder / hasSameElementsAs on Java objects (equals)."""
    remaining = list(expected)
    for item in actual:
        match = next((i for i, e in enumerate(remaining) if item.equals(e)), None)
        if match is None:
            return False
        remaining.pop(match)
    return not remaining


def props(java_map: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in dict(java_map).items()}


class Names:
    """Per-test unique versions of the RCK's fixed namespace names (``ns`` -> ``ns_<uid>``)."""

    def __init__(self, java: Java) -> None:
        self._java = java
        self.uid = uuid.uuid4().hex[:8]
        self.top_levels: set[str] = set()

    def level(self, name: str) -> str:
        unique = f"{name}_{self.uid}"
        self.top_levels.add(unique)
        return unique

    def ns(self, name: str, *children: str) -> Any:
        return self._java.namespace(self.level(name), *children)

    def ident(self, namespace: str, name: str) -> Any:
        return self._java.TableIdentifier.of(self.ns(namespace), name)


class RCK:
    """What one ported test needs: the catalog, the Java handles and its unique names."""

    def __init__(self, catalog: Any, java: Java, names: Names, tmp_path: Path, proxy: ProxyProcess) -> None:
        self.catalog = catalog
        self.java = java
        self.names = names
        self.tmp_path = tmp_path
        self.proxy = proxy
        self.NS = names.ns("newdb")
        self.TABLE = java.TableIdentifier.of(self.NS, "newtable")
        self.RENAMED_TABLE = java.TableIdentifier.of(self.NS, "table_renamed")
        self.TBL = names.ident("ns", "tbl")

    def thrown(self, action: Callable[[], Any], exception: str) -> str:
        return thrown(self.java, action, exception)

    def base_table_location(self, ident: Any) -> str:
        """CatalogTests.baseTableLocation, under this test's temporary directory instead of /tmp."""
        return f"file:{self.tmp_path}/{ident.namespace()}/{ident.name()}"

    def view_location(self, *paths: str) -> str:
        """ViewCatalogTests.viewLocation: the test's temp dir as a ``file:/`` URI plus ``paths``."""
        return "/".join([f"file:{self.tmp_path}", *paths])

    def create_view(self, ident: Any, sql: str = "select * from ns.tbl", dialect: str = "spark") -> Any:
        return (
            self.catalog.buildView(ident)
            .withSchema(self.java.VIEW_SCHEMA)
            .withDefaultNamespace(ident.namespace())
            .withQuery(dialect, sql)
            .create()
        )

    def register_view(self, ident: Any, metadata_location: str) -> None:
        """POST register-view as RESTSessionCatalog.registerView (Iceberg >= 1.11) sends it; raise on errors."""
        namespace = quote("\x1f".join(str(level) for level in ident.namespace().levels()), safe="")
        response = httpx.post(
            f"{self.proxy.url}/v1/local/namespaces/{namespace}/register-view",
            json={"name": str(ident.name()), "metadata-location": metadata_location},
            timeout=30,
        )
        if response.status_code != 200:
            error = response.json()["error"]
            assert error["code"] == response.status_code
            raise RestError(error["type"], error["message"], response.status_code)

    def purge(self) -> None:
        """Drop what the test left behind (RCKUtils.purgeCatalogTestEntries, recursively)."""
        for level in sorted(self.names.top_levels):
            self._purge(self.java.namespace(level))

    def _purge(self, namespace: Any) -> None:
        try:
            if not self.catalog.namespaceExists(namespace):
                return
            for child in self.catalog.listNamespaces(namespace):
                self._purge(child)
            for table in self.catalog.listTables(namespace):
                self.catalog.dropTable(table, False)
            for view in self.catalog.listViews(namespace):
                self.catalog.dropView(view)
            self.catalog.dropNamespace(namespace)
        except Py4JJavaError:
            pass


class RestError(Exception):
    def __init__(self, type_name: str, message: str, code: int) -> None:
        super().__init__(f"{type_name} ({code}): {message}")
        self.type = type_name
        self.message = message
        self.code = code


@pytest.fixture(scope="session")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """The RCK puts custom table and view locations in per-test temporary directories (its @TempDir):
    this catalog allows them beside its warehouse, as an operator running the RCK would configure it."""
    workdir = tmp_path_factory.mktemp("rck")
    allowed = [(workdir / "data" / "warehouse" / "local").as_uri(), tmp_path_factory.getbasetemp().as_uri()]
    config = f"[catalogs.local]\nallowed_locations = {allowed!r}\n".replace("'", '"')
    server = ProxyProcess(workdir, config).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def java(spark: Any) -> Java:
    return Java(spark)


@pytest.fixture(scope="module")
def rest_catalog(java: Java, proxy: ProxyProcess) -> Iterator[Any]:
    """The RCK's client: RCKUtils.initCatalogClient with uri and warehouse pointed at the proxy."""
    catalog = java.ice.rest.RESTCatalog()
    catalog.setConf(java.hadoop_conf)
    catalog.initialize(CATALOG_NAME, java.map({"uri": proxy.url, "warehouse": "local", **RCK_PROPERTIES}))
    yield catalog
    catalog.close()


@pytest.fixture
def rck(rest_catalog: Any, java: Java, tmp_path: Path, proxy: ProxyProcess) -> Iterator[RCK]:
    context = RCK(rest_catalog, java, Names(java), tmp_path, proxy)
    yield context
    context.purge()


# CatalogTests: namespaces ----------------------------------------------------------------------
def test_testCreateNamespace(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    assert not catalog.namespaceExists(NS), "Namespace should not exist"
    catalog.createNamespace(NS)
    assert NS in list(catalog.listNamespaces()), "Catalog should have the created namespace"
    assert catalog.namespaceExists(NS), "Namespace should exist"


def test_testCreateExistingNamespace(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    assert not catalog.namespaceExists(NS)
    catalog.createNamespace(NS)
    assert catalog.namespaceExists(NS)
    message = rck.thrown(lambda: catalog.createNamespace(NS), "AlreadyExistsException")
    assert "Namespace already exists" in message
    assert catalog.namespaceExists(NS), "Namespace should still exist"


def test_testCreateNamespaceWithProperties(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    assert not catalog.namespaceExists(NS)
    create_props = {"prop": "val"}
    catalog.createNamespace(NS, rck.java.map(create_props))
    assert catalog.namespaceExists(NS)
    loaded = props(catalog.loadNamespaceMetadata(NS))
    assert {k: v for k, v in create_props.items() if loaded.get(k) == v} == create_props


def test_testLoadNamespaceMetadata(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    assert not catalog.namespaceExists(NS)
    message = rck.thrown(lambda: catalog.loadNamespaceMetadata(NS), "NoSuchNamespaceException")
    assert message.startswith(f"Namespace does not exist: {NS}")
    catalog.createNamespace(NS)
    assert catalog.namespaceExists(NS)
    assert catalog.loadNamespaceMetadata(NS) is not None, "Should return non-null property map"


def test_testSetNamespaceProperties(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    properties = {"owner": "user", "created-at": "sometime"}
    catalog.createNamespace(NS)
    catalog.setProperties(NS, rck.java.map(properties))
    assert props(catalog.loadNamespaceMetadata(NS)).items() >= properties.items()


def test_testUpdateNamespaceProperties(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    catalog.createNamespace(NS)
    catalog.setProperties(NS, rck.java.map({"owner": "user"}))
    assert props(catalog.loadNamespaceMetadata(NS)).items() >= {"owner": "user"}.items()
    catalog.setProperties(NS, rck.java.map({"owner": "newuser"}))
    assert props(catalog.loadNamespaceMetadata(NS)).items() >= {"owner": "newuser"}.items()


def test_testUpdateAndSetNamespaceProperties(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    catalog.createNamespace(NS)
    catalog.setProperties(NS, rck.java.map({"owner": "user"}))
    assert props(catalog.loadNamespaceMetadata(NS)).items() >= {"owner": "user"}.items()
    updated = {"owner": "newuser", "last-modified-at": "now"}
    catalog.setProperties(NS, rck.java.map(updated))
    assert props(catalog.loadNamespaceMetadata(NS)).items() >= updated.items()


def test_testSetNamespacePropertiesNamespaceDoesNotExist(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    message = rck.thrown(lambda: catalog.setProperties(NS, rck.java.map({"test": "value"})), "NoSuchNamespaceException")
    assert message.startswith(f"Namespace does not exist: {NS}")


def test_testRemoveNamespaceProperties(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    properties = {"owner": "user", "created-at": "sometime"}
    catalog.createNamespace(NS)
    catalog.setProperties(NS, rck.java.map(properties))
    catalog.removeProperties(NS, rck.java.set("created-at"))
    actual = props(catalog.loadNamespaceMetadata(NS))
    assert "created-at" not in actual, "Should not contain deleted property key"
    assert {k: v for k, v in properties.items() if actual.get(k) == v} == {"owner": "user"}


def test_testRemoveNamespacePropertiesNamespaceDoesNotExist(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    message = rck.thrown(lambda: catalog.removeProperties(NS, rck.java.set("a", "b")), "NoSuchNamespaceException")
    assert message.startswith(f"Namespace does not exist: {NS}")


def test_testDropNamespace(rck: RCK) -> None:
    catalog, NS = rck.catalog, rck.NS
    assert not catalog.namespaceExists(NS)
    catalog.createNamespace(NS)
    assert catalog.namespaceExists(NS)
    assert catalog.dropNamespace(NS), "Dropping an existing namespace should return true"
    assert not catalog.namespaceExists(NS)


def test_testDropNonexistentNamespace(rck: RCK) -> None:
    assert not rck.catalog.dropNamespace(rck.NS), "Dropping a nonexistent namespace should return false"


def test_testDropNonEmptyNamespace(rck: RCK) -> None:
    catalog, NS, TABLE = rck.catalog, rck.NS, rck.TABLE
    assert not catalog.namespaceExists(NS)
    catalog.createNamespace(NS)
    assert catalog.namespaceExists(NS)
    catalog.buildTable(TABLE, rck.java.SCHEMA).create()
    assert catalog.tableExists(TABLE)
    message = rck.thrown(lambda: catalog.dropNamespace(NS), "NamespaceNotEmptyException")
    assert "is not empty" in message
    catalog.dropTable(TABLE)
    assert not catalog.tableExists(TABLE)
    assert catalog.dropNamespace(NS)
    assert not catalog.namespaceExists(NS)


def test_testDropNamespaceWithNestedNamespace(rck: RCK) -> None:
    catalog = rck.catalog
    parent = rck.names.ns("parent")
    nested = rck.names.ns("parent", "child")
    assert not catalog.namespaceExists(parent)
    assert not catalog.namespaceExists(nested)
    catalog.createNamespace(parent)
    catalog.createNamespace(nested)
    assert catalog.namespaceExists(parent)
    assert catalog.namespaceExists(nested)
    message = rck.thrown(lambda: catalog.dropNamespace(parent), "NamespaceNotEmptyException")
    assert "is not empty" in message
    assert catalog.namespaceExists(parent), "Parent namespace should still exist"
    assert catalog.namespaceExists(nested), "Nested namespace should still exist"
    assert catalog.dropNamespace(nested)
    assert not catalog.namespaceExists(nested)
    assert catalog.dropNamespace(parent)
    assert not catalog.namespaceExists(parent)


def test_testListNamespaces(rck: RCK) -> None:
    catalog = rck.catalog
    starting = list(catalog.listNamespaces())
    ns1 = rck.names.ns("newdb_1")
    ns2 = rck.names.ns("newdb_2")
    catalog.createNamespace(ns1)
    assert same_elements(catalog.listNamespaces(), [*starting, ns1]), "Should include newdb_1"
    catalog.createNamespace(ns2)
    assert same_elements(catalog.listNamespaces(), [*starting, ns1, ns2]), "Should include newdb_1 and newdb_2"
    catalog.dropNamespace(ns1)
    assert same_elements(catalog.listNamespaces(), [*starting, ns2]), "Should include newdb_2, not newdb_1"
    catalog.dropNamespace(ns2)
    assert catalog.listNamespaces().containsAll(rck.java.list(*starting)), "Should include only starting namespaces"


def test_testListNestedNamespaces(rck: RCK) -> None:
    catalog = rck.catalog
    starting = list(catalog.listNamespaces())
    parent = rck.names.ns("parent")
    child1 = rck.names.ns("parent", "child1")
    child2 = rck.names.ns("parent", "child2")
    catalog.createNamespace(parent)
    assert same_elements(catalog.listNamespaces(), [*starting, parent]), "Should include parent"
    assert list(catalog.listNamespaces(parent)) == [], "Should have no children in newly created parent namespace"
    catalog.createNamespace(child1)
    assert same_elements(catalog.listNamespaces(parent), [child1]), "Should include child1"
    catalog.createNamespace(child2)
    assert same_elements(catalog.listNamespaces(parent), [child1, child2]), "Should include child1 and child2"
    assert same_elements(catalog.listNamespaces(), [*starting, parent]), "Should not change listing the root"
    catalog.dropNamespace(child1)
    assert same_elements(catalog.listNamespaces(parent), [child2]), "Should include only child2"
    catalog.dropNamespace(child2)
    assert list(catalog.listNamespaces(parent)) == [], "Should be empty"


def test_testNamespaceWithDot(rck: RCK) -> None:
    catalog = rck.catalog
    with_dot = rck.java.namespace(rck.names.level("new.db"))
    assert not catalog.namespaceExists(with_dot)
    catalog.createNamespace(with_dot)
    assert catalog.namespaceExists(with_dot)
    assert with_dot in list(catalog.listNamespaces())
    assert catalog.loadNamespaceMetadata(with_dot) is not None, "Properties should be accessible"
    assert catalog.dropNamespace(with_dot), "Dropping the namespace should succeed"
    assert not catalog.namespaceExists(with_dot)


def test_testListNonExistingNamespace(rck: RCK) -> None:
    missing = rck.names.ns("non-existing")
    message = rck.thrown(lambda: rck.catalog.listNamespaces(missing), "NoSuchNamespaceException")
    assert message == f"Namespace does not exist: {missing}"


# CatalogTests: create and load tables ----------------------------------------------------------
def test_testBasicCreateTable(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    assert not catalog.tableExists(TBL)
    catalog.createNamespace(TBL.namespace())
    table = catalog.buildTable(TBL, j.SCHEMA).create()
    assert catalog.tableExists(TBL)
    assert table.name() == f"{catalog.name()}.{TBL}", "Table name should report its full name"
    assert table.schema().asStruct().equals(j.TABLE_SCHEMA.asStruct()), "Schema should match expected ID assignment"
    assert table.location() is not None
    assert table.spec().isUnpartitioned()
    assert table.sortOrder().isUnsorted()
    assert table.properties() is not None


@pytest.mark.xfail(
    strict=True,
    reason="client bug: Iceberg Java 1.10.2 sends request bodies as ISO-8859-1 (apache/iceberg#17646), "
    "so the emoji in the RCK's column doc reaches the server as '?'",
)
def test_unicode_column_doc_round_trip(rck: RCK) -> None:
    """testBasicCreateTable's schema assertion with the RCK's original doc (``unique ID 🤪``)."""
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    table = catalog.buildTable(TBL, j.SCHEMA).create()
    assert table.schema().findField(1).doc() == DOC


def test_latin1_text_from_the_java_client(rck: RCK) -> None:
    """Not an RCK case: text the 1.10.2 client can send (ISO-8859-1 bytes, not UTF-8) round-trips."""
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace(), j.map({"comment": "café"}))
    assert props(catalog.loadNamespaceMetadata(TBL.namespace()))["comment"] == "café"
    doc = "clé unique, größe"
    table = catalog.buildTable(
        TBL, j.schema(j.Types.NestedField.required(1, "id", j.Types.IntegerType.get(), doc))
    ).create()
    assert catalog.loadTable(TBL).schema().findField(1).doc() == doc
    assert table.schema().findField(1).doc() == doc


def test_testTableNameWithDot(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    namespace = rck.names.ns("ns")
    ident = j.TableIdentifier.of(namespace, "ta.ble")
    catalog.createNamespace(namespace)
    assert not catalog.tableExists(ident)
    catalog.buildTable(ident, j.SCHEMA).create()
    assert catalog.tableExists(ident)
    assert ident in list(catalog.listTables(namespace))
    loaded = catalog.loadTable(ident)
    assert loaded.schema().asStruct().equals(j.TABLE_SCHEMA.asStruct())
    catalog.dropTable(ident)
    assert not catalog.tableExists(ident)


def test_testBasicCreateTableThatAlreadyExists(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    assert not catalog.tableExists(TBL)
    catalog.buildTable(TBL, j.SCHEMA).create()
    assert catalog.tableExists(TBL)
    message = rck.thrown(lambda: catalog.buildTable(TBL, j.OTHER_SCHEMA).create(), "AlreadyExistsException")
    assert message.startswith(f"Table already exists: {TBL}")
    table = catalog.loadTable(TBL)
    assert table.schema().asStruct().equals(j.TABLE_SCHEMA.asStruct()), "Schema should match original table schema"


def test_testCompleteCreateTable(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    assert not catalog.tableExists(TBL)
    properties = {"user": "someone", "created-at": "2022-02-25T00:38:19"}
    table = (
        catalog.buildTable(TBL, j.SCHEMA)
        .withLocation(rck.base_table_location(TBL))
        .withPartitionSpec(j.SPEC)
        .withSortOrder(j.WRITE_ORDER)
        .withProperties(j.map(properties))
        .create()
    )
    assert table.name() == f"{catalog.name()}.{TBL}"
    assert catalog.tableExists(TBL)
    assert table.schema().asStruct().equals(j.TABLE_SCHEMA.asStruct())
    assert table.location() is not None
    assert table.spec().equals(j.TABLE_SPEC), "Should use requested partition spec"
    assert table.sortOrder().equals(j.TABLE_WRITE_ORDER), "Should use requested write order"
    assert props(table.properties()).items() >= properties.items()
    assert table.uuid().equals(j.jvm.java.util.UUID.fromString(table.operations().current().uuid()))


def test_testDefaultTableProperties(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    assert not catalog.tableExists(TBL)
    table = (
        catalog.buildTable(TBL, j.SCHEMA)
        .withProperty("default-key2", "catalog-overridden-key2")
        .withProperty("prop1", "val1")
        .create()
    )
    assert (
        props(table.properties()).items()
        >= {
            "default-key1": "catalog-default-key1",
            "default-key2": "catalog-overridden-key2",
            "prop1": "val1",
        }.items()
    )
    assert catalog.dropTable(TBL), "Should successfully drop table"


def test_testDefaultTablePropertiesCreateTransaction(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    assert not catalog.tableExists(TBL)
    (
        catalog.buildTable(TBL, j.SCHEMA)
        .withProperty("default-key2", "catalog-overridden-key2")
        .withProperty("prop1", "val1")
        .createTransaction()
        .commitTransaction()
    )
    table = catalog.loadTable(TBL)
    assert (
        props(table.properties()).items()
        >= {
            "default-key1": "catalog-default-key1",
            "default-key2": "catalog-overridden-key2",
            "prop1": "val1",
        }.items()
    )
    assert catalog.dropTable(TBL)


def test_testDefaultTablePropertiesReplaceTransaction(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    catalog.createTable(TBL, j.SCHEMA)
    assert catalog.tableExists(TBL)
    (
        catalog.buildTable(TBL, j.OTHER_SCHEMA)
        .withProperty("default-key2", "catalog-overridden-key2")
        .withProperty("prop1", "val1")
        .replaceTransaction()
        .commitTransaction()
    )
    table = catalog.loadTable(TBL)
    assert (
        props(table.properties()).items()
        >= {
            "default-key1": "catalog-default-key1",
            "default-key2": "catalog-overridden-key2",
            "prop1": "val1",
        }.items()
    )
    assert catalog.dropTable(TBL)


OVERRIDDEN = {
    "default-key1": "catalog-default-key1",
    "default-key2": "catalog-default-key2",
    "override-key3": "catalog-override-key3",
    "override-key4": "catalog-override-key4",
    "prop1": "val1",
}


def test_testOverrideTableProperties(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    assert not catalog.tableExists(TBL)
    table = (
        catalog.buildTable(TBL, j.SCHEMA)
        .withProperty("override-key4", "catalog-overridden-key4")
        .withProperty("prop1", "val1")
        .create()
    )
    assert props(table.properties()).items() >= OVERRIDDEN.items()
    assert catalog.dropTable(TBL)


def test_testOverrideTablePropertiesCreateTransaction(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    assert not catalog.tableExists(TBL)
    (
        catalog.buildTable(TBL, j.SCHEMA)
        .withProperty("override-key4", "catalog-overridden-key4")
        .withProperty("prop1", "val1")
        .createTransaction()
        .commitTransaction()
    )
    assert props(catalog.loadTable(TBL).properties()).items() >= OVERRIDDEN.items()
    assert catalog.dropTable(TBL)


def test_testOverrideTablePropertiesReplaceTransaction(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    catalog.createTable(TBL, j.SCHEMA)
    assert catalog.tableExists(TBL)
    (
        catalog.buildTable(TBL, j.OTHER_SCHEMA)
        .withProperty("override-key4", "catalog-overridden-key4")
        .withProperty("prop1", "val1")
        .replaceTransaction()
        .commitTransaction()
    )
    assert props(catalog.loadTable(TBL).properties()).items() >= OVERRIDDEN.items()
    assert catalog.dropTable(TBL)


def test_testCreateTableWithDefaultColumnValue(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    assert not catalog.tableExists(TBL)
    column = (
        j.Types.NestedField.required("colWithDefault")
        .withId(1)
        .ofType(j.Types.IntegerType.get())
        .withWriteDefault(j.ice.expressions.Literal.of(10))
        .withInitialDefault(j.ice.expressions.Literal.of(12))
        .build()
    )
    schema_with_default = j.schema(column)
    (
        catalog.buildTable(TBL, schema_with_default)
        .withLocation(rck.base_table_location(TBL))
        .withProperty("format-version", "3")
        .create()
    )
    assert catalog.tableExists(TBL)
    assert schema_with_default.asStruct().equals(catalog.loadTable(TBL).schema().asStruct())


def test_testLoadTable(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    assert not catalog.tableExists(TBL)
    properties = {"user": "someone", "created-at": "2022-02-25T00:38:19"}
    (
        catalog.buildTable(TBL, j.SCHEMA)
        .withLocation(rck.base_table_location(TBL))
        .withPartitionSpec(j.SPEC)
        .withSortOrder(j.WRITE_ORDER)
        .withProperties(j.map(properties))
        .create()
    )
    assert catalog.tableExists(TBL)
    table = catalog.loadTable(TBL)
    assert table.name() == f"{catalog.name()}.{TBL}"
    assert catalog.tableExists(TBL)
    assert table.schema().asStruct().equals(j.TABLE_SCHEMA.asStruct())
    assert table.location() is not None
    assert table.spec().equals(j.TABLE_SPEC)
    assert table.sortOrder().equals(j.TABLE_WRITE_ORDER)
    assert props(table.properties()).items() >= properties.items()


def test_testLoadTableWithNonExistingNamespace(rck: RCK) -> None:
    ident = rck.names.ident("non-existing", "tbl")
    assert not rck.catalog.tableExists(ident)
    message = rck.thrown(lambda: rck.catalog.loadTable(ident), "NoSuchTableException")
    assert message.startswith(f"Table does not exist: {ident}")


def test_testLoadMetadataTable(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    ns_level = rck.names.level("ns")
    table_ident = j.TableIdentifier.of(j.strings(ns_level, "tbl"))
    meta_ident = j.TableIdentifier.of(j.strings(ns_level, "tbl", "files"))
    catalog.createNamespace(table_ident.namespace())
    catalog.buildTable(table_ident, j.SCHEMA).create()
    table = catalog.loadTable(meta_ident)
    assert table is not None
    assert "FilesTable" in j.class_names(table)
    table.refresh()  # the table metadata can be refreshed
    assert table.name() == f"{catalog.name()}.{meta_ident}"


def test_testLoadMissingTable(rck: RCK) -> None:
    catalog, TBL = rck.catalog, rck.TBL
    assert not catalog.tableExists(TBL)
    message = rck.thrown(lambda: catalog.loadTable(TBL), "NoSuchTableException")
    assert message.startswith(f"Table does not exist: {TBL}")


def test_testLoadTableWithMissingMetadataFile(rck: RCK) -> None:
    catalog, j, TBL = rck.catalog, rck.java, rck.TBL
    catalog.createNamespace(TBL.namespace())
    catalog.buildTable(TBL, j.SCHEMA).create()
    assert catalog.tableExists(TBL)
    table = catalog.loadTable(TBL)
    metadata_file_location = str(table.operations().current().metadataFileLocation())
    metadata_file_path = Path(urlparse(metadata_file_location).path)
    renamed = rck.tmp_path / "tmp.json"
    shutil.move(metadata_file_path, renamed)
    try:
        # Clients >= 1.11 throw NotFoundException for a 404 of type NotFoundException (apache/iceberg#13143);
        # 1.10.2 turns every table 404 that is not about the namespace into NoSuchTableException.
        message = rck.thrown(lambda: catalog.loadTable(TBL), "NoSuchTableException")
        assert f"Failed to open input stream for file: {metadata_file_location}" in message
        namespace, name = quote(str(TBL.namespace()), safe=""), quote(str(TBL.name()), safe="")
        response = httpx.get(f"{rck.proxy.url}/v1/local/namespaces/{namespace}/tables/{name}", timeout=30)
        assert response.status_code == 404
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("NotFoundException", 404)
        assert f"Failed to open input stream for file: {metadata_file_location}" in error["message"]
    finally:
        shutil.move(renamed, metadata_file_path)


def test_tableCreationWithoutNamespace(rck: RCK) -> None:
    ident = rck.names.ident("non-existing", "table")
    message = rck.thrown(lambda: rck.catalog.buildTable(ident, rck.java.SCHEMA).create(), "NoSuchNamespaceException")
    assert f"Namespace does not exist: {ident.namespace()}" in message


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_createTableTransaction(rck: RCK, format_version: int) -> None:
    catalog, j = rck.catalog, rck.java
    catalog.createNamespace(rck.NS)
    catalog.newCreateTableTransaction(
        rck.TABLE, j.SCHEMA, j.PartitionSpec.unpartitioned(), j.map({"format-version": str(format_version)})
    ).commitTransaction()
    assert j.format_version(catalog.loadTable(rck.TABLE)) == format_version


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_replaceTableTransaction(rck: RCK, format_version: int) -> None:
    catalog, j = rck.catalog, rck.java
    catalog.createNamespace(rck.NS)
    catalog.newReplaceTableTransaction(
        rck.TABLE, j.SCHEMA, j.PartitionSpec.unpartitioned(), j.map({"format-version": str(format_version)}), True
    ).commitTransaction()
    assert catalog.loadTable(rck.TABLE).operations().current().formatVersion() == format_version


# CatalogTests: rename and drop -----------------------------------------------------------------
def test_testRenameTable(rck: RCK) -> None:
    catalog, j, TABLE, RENAMED = rck.catalog, rck.java, rck.TABLE, rck.RENAMED_TABLE
    catalog.createNamespace(rck.NS)
    assert not catalog.tableExists(TABLE)
    catalog.buildTable(TABLE, j.SCHEMA).create()
    assert catalog.tableExists(TABLE)
    assert not catalog.tableExists(RENAMED)
    catalog.renameTable(TABLE, RENAMED)
    assert catalog.tableExists(RENAMED), "Table should exist with new name"
    assert not catalog.tableExists(TABLE), "Original table should no longer exist"
    catalog.dropTable(RENAMED)
    assert list(catalog.listTables(rck.NS)) == [], "Should not contain table after drop"


def test_dropAfterRenameDoesntCorruptTable(rck: RCK) -> None:
    catalog, j, TABLE, RENAMED = rck.catalog, rck.java, rck.TABLE, rck.RENAMED_TABLE
    catalog.createNamespace(TABLE.namespace())
    spec = j.PartitionSpec.unpartitioned()
    initial_table = catalog.createTable(TABLE, j.SCHEMA, spec)
    initial_file_path = initial_table.locationProvider().newDataLocation("data-a.parquet")
    data_file = j.data_file(spec, initial_file_path)
    initial_table.io().newOutputFile(initial_file_path).create().close()
    initial_table.newAppend().appendFile(data_file).commit()

    catalog.renameTable(TABLE, RENAMED)

    new_table = catalog.createTable(TABLE, j.SCHEMA, spec)
    new_file_path = new_table.locationProvider().newDataLocation("data-b.parquet")
    another_file = j.data_file(spec, new_file_path)
    new_table.io().newOutputFile(new_file_path).create().close()
    new_table.newAppend().appendFile(another_file).commit()

    catalog.dropTable(RENAMED, True)

    assert not catalog.tableExists(RENAMED), "After PURGE, the renamed table must not exist"
    assert catalog.tableExists(TABLE), "The recreated table with the original name must exist"
    table = catalog.loadTable(TABLE)
    io = table.io()
    for location in j.file_locations(table):
        assert io.newInputFile(location).exists(), "Table should remain unaffected by dropping the renamed table"


def test_testRenameTableMissingSourceTable(rck: RCK) -> None:
    catalog, TABLE, RENAMED = rck.catalog, rck.TABLE, rck.RENAMED_TABLE
    catalog.createNamespace(rck.NS)
    assert not catalog.tableExists(TABLE)
    assert not catalog.tableExists(RENAMED)
    message = rck.thrown(lambda: catalog.renameTable(TABLE, RENAMED), "NoSuchTableException")
    assert "Table does not exist" in message
    assert not catalog.tableExists(RENAMED), "Destination table should not exist after failed rename"


def test_renameTableNamespaceMissing(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    source = rck.names.ident("ns", "tbl")
    target = rck.names.ident("non_existing", "renamedTable")
    catalog.createNamespace(source.namespace())
    assert not catalog.tableExists(source)
    catalog.buildTable(source, j.SCHEMA).create()
    assert catalog.tableExists(source)
    message = rck.thrown(lambda: catalog.renameTable(source, target), "NoSuchNamespaceException")
    assert f"Namespace does not exist: {target.namespace()}" in message


def test_testRenameTableDestinationTableAlreadyExists(rck: RCK) -> None:
    catalog, j, TABLE, RENAMED = rck.catalog, rck.java, rck.TABLE, rck.RENAMED_TABLE
    catalog.createNamespace(rck.NS)
    assert not catalog.tableExists(TABLE)
    catalog.buildTable(TABLE, j.SCHEMA).create()
    assert catalog.tableExists(TABLE)
    assert not catalog.tableExists(RENAMED)
    catalog.buildTable(RENAMED, j.SCHEMA).create()
    assert catalog.tableExists(RENAMED)
    message = rck.thrown(lambda: catalog.renameTable(TABLE, RENAMED), "AlreadyExistsException")
    assert "Table already exists" in message
    assert catalog.tableExists(TABLE), "Source table should still exist after failed rename"
    assert catalog.tableExists(RENAMED), "Destination table should still exist after failed rename"
    source_uuid = catalog.loadTable(TABLE).operations().current().uuid()
    destination_uuid = catalog.loadTable(RENAMED).operations().current().uuid()
    assert source_uuid != destination_uuid


def test_testDropTable(rck: RCK) -> None:
    catalog, TABLE = rck.catalog, rck.TABLE
    catalog.createNamespace(rck.NS)
    assert not catalog.tableExists(TABLE)
    catalog.buildTable(TABLE, rck.java.SCHEMA).create()
    assert catalog.tableExists(TABLE)
    assert catalog.dropTable(TABLE), "Should drop a table that does exist"
    assert not catalog.tableExists(TABLE)


def test_testDropTableWithPurge(rck: RCK) -> None:
    catalog, TABLE = rck.catalog, rck.TABLE
    catalog.createNamespace(rck.NS)
    assert not catalog.tableExists(TABLE)
    catalog.buildTable(TABLE, rck.java.SCHEMA).create()
    assert catalog.tableExists(TABLE)
    assert catalog.dropTable(TABLE, True)
    assert not catalog.tableExists(TABLE)


def test_testDropTableWithoutPurge(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    assert not catalog.tableExists(TABLE)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    assert catalog.tableExists(TABLE)
    actual = j.metadata_file_locations(table)
    assert catalog.dropTable(TABLE, False)
    assert not catalog.tableExists(TABLE)
    expected = j.metadata_file_locations(table)
    assert actual == expected
    assert len(actual) == 1, "Should have one metadata file"
    assert all(Path(urlparse(location).path).exists() for location in actual), "Drop without purge keeps metadata"


def test_testDropMissingTable(rck: RCK) -> None:
    catalog = rck.catalog
    catalog.createNamespace(rck.NS)
    no_such_table = rck.java.TableIdentifier.of(rck.NS, "notable")
    assert not catalog.tableExists(no_such_table)
    assert not catalog.dropTable(no_such_table), "Should not drop a table that does not exist"


def test_testListTables(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    ns1, ns2 = rck.names.ns("ns_1"), rck.names.ns("ns_2")
    ns1_table1 = j.TableIdentifier.of(ns1, "table_1")
    ns1_table2 = j.TableIdentifier.of(ns1, "table_2")
    ns2_table1 = j.TableIdentifier.of(ns2, "table_1")
    catalog.createNamespace(ns1)
    catalog.createNamespace(ns2)

    def tables(namespace: Any) -> Any:
        return catalog.listTables(namespace)

    assert list(tables(ns1)) == []
    assert list(tables(ns2)) == []
    catalog.buildTable(ns1_table1, j.SCHEMA).create()
    assert same_elements(tables(ns1), [ns1_table1])
    catalog.buildTable(ns2_table1, j.SCHEMA).create()
    assert same_elements(tables(ns2), [ns2_table1])
    assert same_elements(tables(ns1), [ns1_table1])
    catalog.buildTable(ns1_table2, j.SCHEMA).create()
    assert same_elements(tables(ns2), [ns2_table1])
    assert same_elements(tables(ns1), [ns1_table1, ns1_table2])
    catalog.dropTable(ns1_table1)
    assert same_elements(tables(ns2), [ns2_table1])
    assert same_elements(tables(ns1), [ns1_table2])
    catalog.dropTable(ns1_table2)
    assert same_elements(tables(ns2), [ns2_table1])
    assert list(tables(ns1)) == []
    catalog.dropTable(ns2_table1)
    assert list(tables(ns2)) == []


# CatalogTests: schema, spec and sort order commits ---------------------------------------------
def test_testUpdateTableSchema(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = table.updateSchema().addColumn("new_col", j.Types.LongType.get())
    expected = update.apply()
    update.commit()
    loaded = catalog.loadTable(TABLE)
    assert loaded.schema().asStruct().equals(expected.asStruct())


def test_testUUIDValidation(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = table.updateSchema().addColumn("new_col", j.Types.LongType.get())
    assert catalog.dropTable(TABLE)
    catalog.buildTable(TABLE, j.OTHER_SCHEMA).create()
    message = rck.thrown(update.commit, "CommitFailedException")
    assert "Requirement failed: UUID does not match" in message
    loaded = catalog.loadTable(TABLE)
    assert loaded.schema().asStruct().equals(j.OTHER_SCHEMA.asStruct())


def test_testUpdateTableSchemaServerSideRetry(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = table.updateSchema().addColumn("new_col", j.Types.LongType.get())
    expected = update.apply()
    # update the spec concurrently so that the first update fails, but can succeed on retry
    catalog.loadTable(TABLE).updateSpec().addField("shard", j.Expressions.bucket("id", 16)).commit()
    update.commit()
    loaded = catalog.loadTable(TABLE)
    assert loaded.schema().asStruct().equals(expected.asStruct())


def test_testUpdateTableSchemaConflict(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = table.updateSchema().addColumn("new_col", j.Types.LongType.get())
    concurrent = catalog.loadTable(TABLE).updateSchema().deleteColumn("data")
    expected = concurrent.apply()
    concurrent.commit()
    message = rck.thrown(update.commit, "CommitFailedException")
    assert "Requirement failed: current schema changed" in message
    assert catalog.loadTable(TABLE).schema().asStruct().equals(expected.asStruct())


def test_testUpdateTableSchemaAssignmentConflict(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = table.updateSchema().addColumn("new_col", j.Types.LongType.get())
    concurrent = catalog.loadTable(TABLE).updateSchema().addColumn("another_col", j.Types.StringType.get())
    expected = concurrent.apply()
    concurrent.commit()
    message = rck.thrown(update.commit, "CommitFailedException")
    assert "Requirement failed: last assigned field id changed" in message
    assert catalog.loadTable(TABLE).schema().asStruct().equals(expected.asStruct())


def test_testUpdateTableSchemaThenRevert(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    string = j.Types.StringType.get()
    table.updateSchema().addColumn("col1", string).addColumn("col2", string).addColumn("col3", string).commit()
    table.updateSchema().deleteColumn("col1").deleteColumn("col2").deleteColumn("col3").commit()
    assert table.schema().asStruct().equals(j.TABLE_SCHEMA.asStruct())


def test_testUpdateTableSpec(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = table.updateSpec().addField("shard", j.Expressions.bucket("id", 16))
    expected = update.apply()
    update.commit()
    assert catalog.loadTable(TABLE).spec().fields().equals(expected.fields())


def test_testUpdateTableSpecServerSideRetry(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = table.updateSpec().addField("shard", j.Expressions.bucket("id", 16))
    expected = update.apply()
    catalog.loadTable(TABLE).updateSchema().addColumn("another_col", j.Types.StringType.get()).commit()
    update.commit()
    assert catalog.loadTable(TABLE).spec().fields().equals(expected.fields())


def test_testUpdateTableSpecConflict(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC).create()
    update = table.updateSpec().addField("shard", j.Expressions.bucket("data", 16))
    concurrent = catalog.loadTable(TABLE).updateSpec().removeField(j.Expressions.bucket("id", 16))
    expected = concurrent.apply()
    concurrent.commit()
    message = rck.thrown(update.commit, "CommitFailedException")
    assert "Requirement failed: default partition spec changed" in message
    assert catalog.loadTable(TABLE).spec().fields().equals(expected.fields())


def test_testUpdateTableAssignmentSpecConflict(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = table.updateSpec().addField("shard", j.Expressions.bucket("id", 16))
    concurrent = catalog.loadTable(TABLE).updateSpec().addField("shard", j.Expressions.truncate("id", 100))
    expected = concurrent.apply()
    concurrent.commit()
    message = rck.thrown(update.commit, "CommitFailedException")
    assert "Requirement failed: last assigned partition id changed" in message
    assert catalog.loadTable(TABLE).spec().fields().equals(expected.fields())


def test_testUpdateTableSpecThenRevert(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC).withProperty("format-version", "2").create()
    assert j.format_version(table) == 2, "Should be a v2 table"
    table.updateSpec().addField("id").commit()
    table.updateSpec().removeField("id").commit()
    assert table.spec().equals(j.TABLE_SPEC)


@pytest.mark.parametrize("with_branch", [True, False])
def test_testRemoveUnusedSpec(rck: RCK, with_branch: bool) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC).withProperty("gc.enabled", "true").create()
    spec = table.spec()
    table.newFastAppend().appendFile(j.FILE_A).commit()  # a file to trigger snapshot expiration
    if with_branch:
        table.manageSnapshots().createBranch("test").commit()
    table.updateSpec().addField(j.Expressions.bucket("data", 16)).commit()
    table.updateSpec().removeField(j.Expressions.bucket("data", 16)).commit()
    table.updateSpec().addField("data").commit()
    assert table.specs().size() == 3, "Should have 3 total specs"
    current = table.spec()
    table.expireSnapshots().cleanExpiredMetadata(True).commit()

    loaded = catalog.loadTable(TABLE)
    assert same_elements(loaded.specs().values(), [spec, current])

    # add a data file with the current spec and remove the old data file
    table.newDelete().deleteFile(j.FILE_A).commit()
    another_file = j.data_file(current, "/path/to/data-b.parquet", "id_bucket=0/data=123")
    table.newAppend().appendFile(another_file).commit()
    (
        table.expireSnapshots()
        .cleanExpiredFiles(False)  # ExpireSnapshots.CleanupLevel.NONE in newer Iceberg
        .expireOlderThan(table.currentSnapshot().timestampMillis())
        .cleanExpiredMetadata(True)
        .commit()
    )
    loaded = catalog.loadTable(TABLE)
    if with_branch:
        assert same_elements(loaded.specs().values(), [spec, current])
    else:
        assert same_elements(loaded.specs().values(), [current])


@pytest.mark.parametrize("with_branch", [True, False])
def test_testRemoveUnusedSchemas(rck: RCK, with_branch: bool) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC).withProperty("gc.enabled", "true").create()
    table.newFastAppend().appendFile(j.FILE_A).commit()
    first_snapshot = table.currentSnapshot()
    if with_branch:
        table.manageSnapshots().createBranch("test").commit()
    table.updateSchema().addColumn("col_to_delete", j.Types.IntegerType.get()).commit()
    table.updateSchema().deleteColumn("col_to_delete").commit()
    table.updateSchema().addColumn("extra_col", j.Types.StringType.get()).commit()
    assert table.schemas().size() == 3, "Should have 3 total schemas"

    # keeps the schema used by the single snapshot and the current schema; doesn't remove snapshots
    table.expireSnapshots().cleanExpiredMetadata(True).commit()

    loaded = catalog.loadTable(TABLE)
    assert loaded.snapshot(first_snapshot.snapshotId()) is not None
    assert set(loaded.schemas().keySet()) == {first_snapshot.schemaId(), loaded.schema().schemaId()}

    table.updateSchema().addColumn("extra_col2", j.Types.LongType.get()).commit()
    table.newFastAppend().appendFile(j.FILE_B).commit()
    (
        table.expireSnapshots()
        .expireOlderThan(table.currentSnapshot().timestampMillis())
        .cleanExpiredMetadata(True)
        .commit()
    )
    loaded = catalog.loadTable(TABLE)
    if with_branch:
        assert same_elements(loaded.snapshots(), [first_snapshot, loaded.currentSnapshot()])
        assert set(loaded.schemas().keySet()) == {first_snapshot.schemaId(), loaded.currentSnapshot().schemaId()}
    else:
        assert loaded.snapshot(first_snapshot.snapshotId()) is None
        assert set(loaded.schemas().keySet()) == {loaded.currentSnapshot().schemaId()}


def test_testUpdateTableSortOrder(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = j.asc(j.asc(table.replaceSortOrder(), j.Expressions.bucket("id", 16)), "id")
    expected = update.apply()
    update.commit()
    assert catalog.loadTable(TABLE).sortOrder().fields().equals(expected.fields())


def test_testUpdateTableSortOrderServerSideRetry(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    update = j.asc(j.asc(table.replaceSortOrder(), j.Expressions.bucket("id", 16)), "id")
    expected = update.apply()
    catalog.loadTable(TABLE).updateSchema().addColumn("another_col", j.Types.StringType.get()).commit()
    update.commit()
    assert catalog.loadTable(TABLE).sortOrder().fields().equals(expected.fields())


def test_testUpdateTableOrderThenRevert(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).withSortOrder(j.WRITE_ORDER).create()
    j.asc(table.replaceSortOrder(), "id").commit()
    j.asc(j.asc(table.replaceSortOrder(), j.Expressions.bucket("id", 16)), "id").commit()
    assert table.sortOrder().equals(j.TABLE_WRITE_ORDER)


# CatalogTests: appends and transactions --------------------------------------------------------
def test_testAppend(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(rck.TABLE, j.SCHEMA).withPartitionSpec(j.SPEC).create()
    j.assert_no_files(table)
    table.newFastAppend().appendFile(j.FILE_A).commit()
    j.assert_files(table, j.FILE_A)


def test_testConcurrentAppendEmptyTable(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC).create()
    j.assert_no_files(table)
    append = table.newFastAppend().appendFile(j.FILE_A)
    append.apply()  # apply changes to eagerly write metadata
    catalog.loadTable(TABLE).newFastAppend().appendFile(j.FILE_B).commit()
    j.assert_files(catalog.loadTable(TABLE), j.FILE_B)
    append.commit()  # the uncommitted append should retry and succeed
    j.assert_files(catalog.loadTable(TABLE), j.FILE_A, j.FILE_B)


def test_testConcurrentAppendNonEmptyTable(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC).create()
    j.assert_no_files(table)
    catalog.loadTable(TABLE).newFastAppend().appendFile(j.FILE_C).commit()
    append = table.newFastAppend().appendFile(j.FILE_A)
    append.apply()
    catalog.loadTable(TABLE).newFastAppend().appendFile(j.FILE_B).commit()
    j.assert_files(catalog.loadTable(TABLE), j.FILE_B, j.FILE_C)
    append.commit()
    j.assert_files(catalog.loadTable(TABLE), j.FILE_A, j.FILE_B, j.FILE_C)


def test_testUpdateTransaction(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    transaction = table.newTransaction()
    update_schema = transaction.updateSchema().addColumn("new_col", j.Types.LongType.get())
    expected_schema = update_schema.apply()
    update_schema.commit()
    update_spec = transaction.updateSpec().addField("shard", j.Expressions.bucket("id", 16))
    expected_spec = update_spec.apply()
    update_spec.commit()
    transaction.commitTransaction()
    loaded = catalog.loadTable(TABLE)
    assert loaded.schema().asStruct().equals(expected_schema.asStruct())
    assert loaded.spec().fields().equals(expected_spec.fields())
    j.assert_previous_metadata_file_count(loaded, 1)


def test_testCreateTransaction(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    create = catalog.buildTable(TABLE, j.SCHEMA).createTransaction()
    assert not catalog.tableExists(TABLE), "Table should not exist after createTransaction"
    create.newFastAppend().appendFile(j.FILE_A).commit()
    assert not catalog.tableExists(TABLE), "Table should not exist after append commit"
    create.commitTransaction()
    assert catalog.tableExists(TABLE)
    table = catalog.loadTable(TABLE)
    j.assert_files(table, j.FILE_A)
    j.assert_previous_metadata_file_count(table, 0)


def _complete_create_checks(rck: RCK, table: Any, properties: dict[str, str]) -> None:
    j = rck.java
    assert table.schema().asStruct().equals(j.TABLE_SCHEMA.asStruct())
    assert table.spec().fields().equals(j.TABLE_SPEC.fields())
    assert table.sortOrder().equals(j.TABLE_WRITE_ORDER)
    assert props(table.properties()).items() >= properties.items()
    assert table.location() == rck.base_table_location(rck.TABLE), "Table location should match requested"


def test_testCompleteCreateTransaction(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    properties = {"user": "someone", "created-at": "2022-02-25T00:38:19"}
    create = (
        catalog.buildTable(TABLE, j.SCHEMA)
        .withLocation(rck.base_table_location(TABLE))
        .withPartitionSpec(j.SPEC)
        .withSortOrder(j.WRITE_ORDER)
        .withProperties(j.map(properties))
        .createTransaction()
    )
    assert not catalog.tableExists(TABLE)
    create.newFastAppend().appendFile(j.FILE_A).commit()
    assert not catalog.tableExists(TABLE)
    create.commitTransaction()
    assert catalog.tableExists(TABLE)
    table = catalog.loadTable(TABLE)
    _complete_create_checks(rck, table, properties)
    j.assert_files(table, j.FILE_A)
    j.assert_files_partition_spec(table)
    j.assert_previous_metadata_file_count(table, 0)


def test_testCompleteCreateTransactionMultipleSchemas(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    properties = {"user": "someone", "created-at": "2022-02-25T00:38:19"}
    create = (
        catalog.buildTable(TABLE, j.SCHEMA)
        .withLocation(rck.base_table_location(TABLE))
        .withPartitionSpec(j.SPEC)
        .withSortOrder(j.WRITE_ORDER)
        .withProperties(j.map(properties))
        .createTransaction()
    )
    assert not catalog.tableExists(TABLE)
    create.newFastAppend().appendFile(j.FILE_A).commit()
    update_schema = create.updateSchema().addColumn("new_col", j.Types.LongType.get())
    new_schema = update_schema.apply()
    update_schema.commit()
    create.updateSpec().addField("new_col").commit()
    replace_sort_order = j.asc(create.replaceSortOrder(), "new_col")
    new_sort_order = replace_sort_order.apply()
    replace_sort_order.commit()
    new_spec = create.table().spec()  # the new spec after commit, to write a file with it
    another_file = j.data_file(new_spec, "/path/to/data-b.parquet", "id_bucket=0/new_col=0")
    create.newFastAppend().appendFile(another_file).commit()
    assert not catalog.tableExists(TABLE)
    create.commitTransaction()
    assert catalog.tableExists(TABLE)

    table = catalog.loadTable(TABLE)
    initial_spec_id, update_schema_id, update_spec_id, update_order_id = 0, 1, 1, 2
    assert table.schema().asStruct().equals(new_schema.asStruct())
    assert table.schema().schemaId() == update_schema_id
    assert table.spec().fields().equals(new_spec.fields())
    assert table.spec().specId() == update_spec_id
    assert table.sortOrder().fields().equals(new_sort_order.fields())
    assert table.sortOrder().orderId() == update_order_id
    assert props(table.properties()).items() >= properties.items()
    assert table.location() == rck.base_table_location(TABLE)
    j.assert_files(table, j.FILE_A, another_file)
    j.assert_file_partition_spec(table, j.FILE_A, initial_spec_id)
    j.assert_file_partition_spec(table, another_file, update_spec_id)
    j.assert_previous_metadata_file_count(table, 0)


def test_testCompleteCreateTransactionV2(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    properties = {"user": "someone", "created-at": "2022-02-25T00:38:19", "format-version": "2"}
    create = (
        catalog.buildTable(TABLE, j.SCHEMA)
        .withLocation(rck.base_table_location(TABLE))
        .withPartitionSpec(j.SPEC)
        .withSortOrder(j.WRITE_ORDER)
        .withProperties(j.map(properties))
        .createTransaction()
    )
    assert not catalog.tableExists(TABLE)
    create.newFastAppend().appendFile(j.FILE_A).commit()
    assert not catalog.tableExists(TABLE)
    create.commitTransaction()
    assert catalog.tableExists(TABLE)
    table = catalog.loadTable(TABLE)
    expected_props = {k: v for k, v in properties.items() if k != "format-version"}
    assert table.schema().asStruct().equals(j.TABLE_SCHEMA.asStruct())
    assert table.spec().fields().equals(j.TABLE_SPEC.fields())
    assert table.sortOrder().equals(j.TABLE_WRITE_ORDER)
    table_props = props(table.properties())
    assert {k: v for k, v in properties.items() if table_props.get(k) == v} == expected_props
    assert table.currentSnapshot().sequenceNumber() == 1, "Sequence number should start at 1 for v2 format"
    assert table.location() == rck.base_table_location(TABLE)
    j.assert_files(table, j.FILE_A)
    j.assert_files_partition_spec(table)
    j.assert_previous_metadata_file_count(table, 0)


def test_testConcurrentCreateTransaction(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    create = catalog.buildTable(TABLE, j.SCHEMA).createTransaction()
    assert not catalog.tableExists(TABLE)
    create.newFastAppend().appendFile(j.FILE_A).commit()
    assert not catalog.tableExists(TABLE)
    catalog.buildTable(TABLE, j.OTHER_SCHEMA).create()
    message = rck.thrown(create.commitTransaction, "AlreadyExistsException")
    assert message.startswith("Requirement failed: table already exists")
    table = catalog.loadTable(TABLE)
    assert table.schema().asStruct().equals(j.OTHER_SCHEMA.asStruct()), "Table schema should match concurrent create"
    j.assert_no_files(table)


def test_testCreateOrReplaceTransactionCreate(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    create = catalog.buildTable(TABLE, j.SCHEMA).createOrReplaceTransaction()
    assert not catalog.tableExists(TABLE)
    create.newFastAppend().appendFile(j.FILE_A).commit()
    assert not catalog.tableExists(TABLE)
    create.commitTransaction()
    assert catalog.tableExists(TABLE)
    table = catalog.loadTable(TABLE)
    j.assert_files(table, j.FILE_A)
    j.assert_previous_metadata_file_count(table, 0)


def test_testCompleteCreateOrReplaceTransactionCreate(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    properties = {"user": "someone", "created-at": "2022-02-25T00:38:19"}
    create_or_replace = (
        catalog.buildTable(TABLE, j.SCHEMA)
        .withLocation(rck.base_table_location(TABLE))
        .withPartitionSpec(j.SPEC)
        .withSortOrder(j.WRITE_ORDER)
        .withProperties(j.map(properties))
        .createOrReplaceTransaction()
    )
    assert not catalog.tableExists(TABLE)
    create_or_replace.newFastAppend().appendFile(j.FILE_A).commit()
    assert not catalog.tableExists(TABLE)
    create_or_replace.commitTransaction()
    assert catalog.tableExists(TABLE)
    table = catalog.loadTable(TABLE)
    _complete_create_checks(rck, table, properties)
    j.assert_files(table, j.FILE_A)
    j.assert_files_partition_spec(table)
    j.assert_previous_metadata_file_count(table, 0)


def test_testCreateOrReplaceReplaceTransactionReplace(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    original = catalog.buildTable(TABLE, j.OTHER_SCHEMA).create()
    assert catalog.tableExists(TABLE)
    create_or_replace = catalog.buildTable(TABLE, j.SCHEMA).createOrReplaceTransaction()
    assert catalog.tableExists(TABLE)
    create_or_replace.newFastAppend().appendFile(j.FILE_A).commit()
    table = catalog.loadTable(TABLE)  # the table has not changed
    assert table.schema().asStruct().equals(j.OTHER_SCHEMA.asStruct())
    j.assert_uuids_match(original, table)
    j.assert_no_files(table)
    create_or_replace.commitTransaction()
    assert catalog.tableExists(TABLE)
    table.refresh()  # refresh should work with UUID validation
    loaded = catalog.loadTable(TABLE)
    assert loaded.schema().asStruct().equals(j.REPLACE_SCHEMA.asStruct())
    j.assert_uuids_match(original, loaded)
    j.assert_files(loaded, j.FILE_A)
    j.assert_previous_metadata_file_count(loaded, 1)


def _complete_replace(rck: RCK, transaction: Callable[[Any], Any]) -> None:
    """testCompleteCreateOrReplaceTransactionReplace and testCompleteReplaceTransaction."""
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    original = catalog.buildTable(TABLE, j.OTHER_SCHEMA).create()
    assert catalog.tableExists(TABLE)
    properties = {"user": "someone", "created-at": "2022-02-25T00:38:19"}
    replace = transaction(
        catalog.buildTable(TABLE, j.SCHEMA)
        .withLocation(rck.base_table_location(TABLE))
        .withPartitionSpec(j.SPEC)
        .withSortOrder(j.WRITE_ORDER)
        .withProperties(j.map(properties))
    )
    assert catalog.tableExists(TABLE)
    replace.newFastAppend().appendFile(j.FILE_A).commit()
    table = catalog.loadTable(TABLE)  # the table has not changed
    assert table.schema().asStruct().equals(j.OTHER_SCHEMA.asStruct())
    assert table.spec().isUnpartitioned()
    assert table.sortOrder().isUnsorted()
    assert table.properties().get("created-at") != "2022-02-25T00:38:19", "Created at should not match"
    j.assert_uuids_match(original, table)
    j.assert_no_files(table)
    replace.commitTransaction()
    assert catalog.tableExists(TABLE)
    table.refresh()  # refresh should work with UUID validation
    loaded = catalog.loadTable(TABLE)
    assert loaded.schema().asStruct().equals(j.REPLACE_SCHEMA.asStruct())
    assert loaded.spec().equals(j.REPLACE_SPEC), "Table should have replace partition spec"
    assert loaded.sortOrder().equals(j.REPLACE_WRITE_ORDER), "Table should have replace sort order"
    assert props(loaded.properties()).items() >= properties.items()
    assert table.location() == rck.base_table_location(TABLE), "Table location should be replaced"
    j.assert_uuids_match(original, loaded)
    j.assert_files(loaded, j.FILE_A)
    j.assert_previous_metadata_file_count(loaded, 1)


def test_testCompleteCreateOrReplaceTransactionReplace(rck: RCK) -> None:
    _complete_replace(rck, lambda builder: builder.createOrReplaceTransaction())


def test_testCreateOrReplaceTransactionConcurrentCreate(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    create_or_replace = catalog.buildTable(TABLE, j.SCHEMA).createOrReplaceTransaction()
    assert not catalog.tableExists(TABLE)
    create_or_replace.newFastAppend().appendFile(j.FILE_A).commit()
    assert not catalog.tableExists(TABLE)
    catalog.buildTable(TABLE, j.OTHER_SCHEMA).create()
    message = rck.thrown(create_or_replace.commitTransaction, "AlreadyExistsException")
    assert message.startswith("Requirement failed: table already exists")
    table = catalog.loadTable(TABLE)
    assert table.schema().asStruct().equals(j.OTHER_SCHEMA.asStruct())
    j.assert_no_files(table)


def test_testReplaceTransaction(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    original = catalog.buildTable(TABLE, j.OTHER_SCHEMA).create()
    assert catalog.tableExists(TABLE)
    replace = catalog.buildTable(TABLE, j.SCHEMA).replaceTransaction()
    assert catalog.tableExists(TABLE)
    replace.newFastAppend().appendFile(j.FILE_A).commit()
    table = catalog.loadTable(TABLE)
    assert table.schema().asStruct().equals(j.OTHER_SCHEMA.asStruct())
    j.assert_uuids_match(original, table)
    j.assert_no_files(table)
    replace.commitTransaction()
    assert catalog.tableExists(TABLE)
    table.refresh()
    loaded = catalog.loadTable(TABLE)
    assert loaded.schema().asStruct().equals(j.REPLACE_SCHEMA.asStruct())
    j.assert_uuids_match(original, loaded)
    j.assert_files(loaded, j.FILE_A)
    j.assert_previous_metadata_file_count(loaded, 1)


def test_testCompleteReplaceTransaction(rck: RCK) -> None:
    _complete_replace(rck, lambda builder: builder.replaceTransaction())


def test_testReplaceTransactionRequiresTableExists(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    message = rck.thrown(lambda: catalog.buildTable(TABLE, j.SCHEMA).replaceTransaction(), "NoSuchTableException")
    assert message.startswith(f"Table does not exist: {TABLE}")


def test_testReplaceTableKeepsSnapshotLog(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(TABLE.namespace())
    catalog.createTable(TABLE, j.SCHEMA)
    table = catalog.loadTable(TABLE)
    table.newAppend().appendFile(j.FILE_A).commit()
    log_before = list(table.operations().current().snapshotLog())
    assert len(log_before) == 1
    snapshot_before = log_before[0]
    replace = catalog.newReplaceTableTransaction(TABLE, j.SCHEMA, False)
    replace.newAppend().appendFile(j.FILE_A).commit()
    replace.commitTransaction()
    table.refresh()
    log_after = list(table.operations().current().snapshotLog())
    assert len(log_after) == 2
    snapshot_after = log_after[1]
    assert not snapshot_after.equals(snapshot_before)
    assert log_after[0].equals(snapshot_before)


def _concurrent_replaces(
    rck: RCK, create_schema: Any, second: Callable[[], Any], first: Callable[[], Any]
) -> tuple[Any, Any]:
    """The common start of the testConcurrentReplaceTransaction* cases.

    Creates the table (FILE_A) with ``create_schema``, starts the second replace from the builder
    ``second()`` (FILE_C), then starts and commits the first replace from ``first()`` (FILE_B).
    Returns the original table and the uncommitted second replace.
    """
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    transaction = catalog.buildTable(TABLE, create_schema).createTransaction()
    transaction.newFastAppend().appendFile(j.FILE_A).commit()
    transaction.commitTransaction()
    original = catalog.loadTable(TABLE)
    j.assert_files(original, j.FILE_A)
    second_replace = second().replaceTransaction()
    second_replace.newFastAppend().appendFile(j.FILE_C).commit()
    first_replace = first().replaceTransaction()
    first_replace.newFastAppend().appendFile(j.FILE_B).commit()
    first_replace.commitTransaction()
    return original, second_replace


def test_testConcurrentReplaceTransactions(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    original, second_replace = _concurrent_replaces(
        rck, j.SCHEMA, lambda: catalog.buildTable(TABLE, j.SCHEMA), lambda: catalog.buildTable(TABLE, j.SCHEMA)
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.schema().asStruct().equals(original.schema().asStruct())
    assert after_first.spec().isUnpartitioned()
    assert after_first.sortOrder().isUnsorted()
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    second_replace.commitTransaction()
    after_second = catalog.loadTable(TABLE)
    assert after_second.schema().asStruct().equals(original.schema().asStruct())
    assert after_second.spec().isUnpartitioned()
    assert after_second.sortOrder().isUnsorted()
    j.assert_uuids_match(original, after_second)
    j.assert_files(after_second, j.FILE_C)


def test_testConcurrentReplaceTransactionSchema(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    original, second_replace = _concurrent_replaces(
        rck,
        j.OTHER_SCHEMA,
        lambda: catalog.buildTable(TABLE, j.OTHER_SCHEMA),
        lambda: catalog.buildTable(TABLE, j.SCHEMA),
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.schema().asStruct().equals(j.REPLACE_SCHEMA.asStruct())
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    second_replace.commitTransaction()
    after_second = catalog.loadTable(TABLE)
    assert after_second.schema().asStruct().equals(original.schema().asStruct())
    j.assert_uuids_match(original, after_second)
    j.assert_files(after_second, j.FILE_C)


def test_testConcurrentReplaceTransactionSchema2(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    original, second_replace = _concurrent_replaces(
        rck,
        j.OTHER_SCHEMA,
        lambda: catalog.buildTable(TABLE, j.SCHEMA),
        lambda: catalog.buildTable(TABLE, j.OTHER_SCHEMA),
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.schema().asStruct().equals(original.schema().asStruct())
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    second_replace.commitTransaction()
    after_second = catalog.loadTable(TABLE)
    assert after_second.schema().asStruct().equals(j.REPLACE_SCHEMA.asStruct())
    j.assert_uuids_match(original, after_second)
    j.assert_files(after_second, j.FILE_C)


def test_testConcurrentReplaceTransactionSchemaConflict(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    original, second_replace = _concurrent_replaces(
        rck,
        j.OTHER_SCHEMA,
        lambda: catalog.buildTable(TABLE, j.SCHEMA),
        lambda: catalog.buildTable(TABLE, j.SCHEMA),
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.schema().asStruct().equals(j.REPLACE_SCHEMA.asStruct())
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    # even though the new schema is identical, the assertion that the last assigned id has not changed fails
    message = rck.thrown(second_replace.commitTransaction, "CommitFailedException")
    assert message.startswith("Commit failed: Requirement failed: last assigned field id changed")


def test_testConcurrentReplaceTransactionPartitionSpec(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    original, second_replace = _concurrent_replaces(
        rck,
        j.SCHEMA,
        lambda: catalog.buildTable(TABLE, j.SCHEMA),
        lambda: catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC),
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.spec().fields().equals(j.TABLE_SPEC.fields())
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    second_replace.commitTransaction()
    after_second = catalog.loadTable(TABLE)
    assert after_second.spec().isUnpartitioned()
    j.assert_uuids_match(original, after_second)
    j.assert_files(after_second, j.FILE_C)


def test_testConcurrentReplaceTransactionPartitionSpec2(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    original, second_replace = _concurrent_replaces(
        rck,
        j.SCHEMA,
        lambda: catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC),
        lambda: catalog.buildTable(TABLE, j.SCHEMA),
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.spec().isUnpartitioned()
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    second_replace.commitTransaction()
    after_second = catalog.loadTable(TABLE)
    assert after_second.spec().fields().equals(j.TABLE_SPEC.fields())
    j.assert_uuids_match(original, after_second)
    j.assert_files(after_second, j.FILE_C)


def test_testConcurrentReplaceTransactionPartitionSpecConflict(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    original, second_replace = _concurrent_replaces(
        rck,
        j.SCHEMA,
        lambda: catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC),
        lambda: catalog.buildTable(TABLE, j.SCHEMA).withPartitionSpec(j.SPEC),
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.spec().fields().equals(j.TABLE_SPEC.fields())
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    # even though the new spec is identical, the assertion that the last assigned id has not changed fails
    message = rck.thrown(second_replace.commitTransaction, "CommitFailedException")
    assert message.startswith("Commit failed: Requirement failed: last assigned partition id changed")


def test_testConcurrentReplaceTransactionSortOrder(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    original, second_replace = _concurrent_replaces(
        rck,
        j.SCHEMA,
        lambda: catalog.buildTable(TABLE, j.SCHEMA),
        lambda: catalog.buildTable(TABLE, j.SCHEMA).withSortOrder(j.WRITE_ORDER),
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.sortOrder().equals(j.TABLE_WRITE_ORDER)
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    second_replace.commitTransaction()
    after_second = catalog.loadTable(TABLE)
    assert after_second.sortOrder().isUnsorted()
    j.assert_uuids_match(original, after_second)
    j.assert_files(after_second, j.FILE_C)


def test_testConcurrentReplaceTransactionSortOrderConflict(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    descending = j.SortOrder.builderFor(j.SCHEMA).desc(j.Expressions.bucket("id", 16)).desc("id").build()
    original, second_replace = _concurrent_replaces(
        rck,
        j.SCHEMA,
        lambda: catalog.buildTable(TABLE, j.SCHEMA).withSortOrder(j.WRITE_ORDER),
        lambda: catalog.buildTable(TABLE, j.SCHEMA).withSortOrder(descending),
    )
    after_first = catalog.loadTable(TABLE)
    assert after_first.sortOrder().isSorted()
    j.assert_uuids_match(original, after_first)
    j.assert_files(after_first, j.FILE_B)
    second_replace.commitTransaction()
    after_second = catalog.loadTable(TABLE)
    assert after_second.sortOrder().fields().equals(j.TABLE_WRITE_ORDER.fields())
    j.assert_uuids_match(original, after_second)
    j.assert_files(after_second, j.FILE_C)


def test_testMetadataFileLocationsRemovalAfterCommit(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(rck.NS)
    table = catalog.buildTable(TABLE, j.SCHEMA).create()
    long_type = j.Types.LongType.get()
    for column in ("a", "b", "c"):
        table.updateSchema().addColumn(column, long_type).commit()
    assert len(j.metadata_file_locations(table)) == 4

    keep = 2
    (
        table.updateProperties()
        .set("write.metadata.delete-after-commit.enabled", "true")
        .set("write.metadata.previous-versions-max", str(keep))
        .commit()
    )
    assert len(j.metadata_file_locations(table)) == keep + 1
    for i in range(1, 6):
        table.updateSchema().addColumn(f"d{i}", long_type).commit()
        assert len(j.metadata_file_locations(table)) == keep + 1

    keep = 4
    table.updateProperties().set("write.metadata.previous-versions-max", str(keep)).commit()
    for i in range(1, 11):
        table.updateSchema().addColumn(f"e{i}", long_type).commit()
        locations = j.metadata_file_locations(table)
        assert len(locations) == keep + 1
    # and the files that fell out of the log are gone (the RCK reads the log only)
    metadata_dir = Path(urlparse(str(table.location())).path) / "metadata"
    on_disk = {p.name for p in metadata_dir.glob("*.metadata.json")}
    assert on_disk == {Path(urlparse(location).path).name for location in locations}


# CatalogTests: register ------------------------------------------------------------------------
def test_testRegisterTable(rck: RCK) -> None:
    catalog, j, TABLE = rck.catalog, rck.java, rck.TABLE
    catalog.createNamespace(TABLE.namespace())
    properties = {"user": "someone", "created-at": "2023-01-15T00:00:01"}
    original_table = (
        catalog.buildTable(TABLE, j.SCHEMA)
        .withPartitionSpec(j.SPEC)
        .withSortOrder(j.WRITE_ORDER)
        .withProperties(j.map(properties))
        .create()
    )
    original_table.newFastAppend().appendFile(j.FILE_A).commit()
    original_table.newFastAppend().appendFile(j.FILE_B).commit()
    original_table.newDelete().deleteFile(j.FILE_A).commit()
    original_table.newFastAppend().appendFile(j.FILE_C).commit()
    metadata_location = original_table.operations().current().metadataFileLocation()

    catalog.dropTable(TABLE, False)  # do not purge
    registered = catalog.registerTable(TABLE, metadata_location)

    assert registered is not None
    assert catalog.tableExists(TABLE), "Table must exist"
    assert props(registered.properties()).items() >= properties.items(), "Props must match"
    assert registered.schema().asStruct().equals(original_table.schema().asStruct()), "Schema must match"
    assert registered.specs().equals(original_table.specs()), "Specs must match"
    assert registered.sortOrders().equals(original_table.sortOrders()), "Sort orders must match"
    assert registered.currentSnapshot().equals(original_table.currentSnapshot()), "Current snapshot must match"
    assert j.Lists.newArrayList(registered.snapshots()).equals(j.Lists.newArrayList(original_table.snapshots()))
    assert registered.history().equals(original_table.history()), "History must match"
    registered_schemas, original_schemas = registered.schemas(), original_table.schemas()
    assert set(registered_schemas.keySet()) == set(original_schemas.keySet())
    for schema_id in original_schemas.keySet():
        assert registered_schemas.get(schema_id).asStruct().equals(original_schemas.get(schema_id).asStruct())
    j.assert_files(registered, j.FILE_B, j.FILE_C)

    registered.newFastAppend().appendFile(j.FILE_A).commit()
    j.assert_files(registered, j.FILE_B, j.FILE_C, j.FILE_A)
    assert catalog.loadTable(TABLE) is not None
    assert catalog.dropTable(TABLE)
    assert not catalog.tableExists(TABLE)


def test_testRegisterExistingTable(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("a", "t1")
    catalog.createNamespace(identifier.namespace())
    catalog.createTable(identifier, j.SCHEMA)
    table = catalog.loadTable(identifier)
    metadata_location = table.operations().current().metadataFileLocation()
    message = rck.thrown(lambda: catalog.registerTable(identifier, metadata_location), "AlreadyExistsException")
    assert message.startswith(f"Table already exists: {identifier}")
    assert catalog.dropTable(identifier)


# ViewCatalogTests: loading, and name clashes with tables ---------------------------------------
def test_loadViewWithNonExistingNamespace(rck: RCK) -> None:
    ident = rck.names.ident("non-existing", "view")
    assert not rck.catalog.viewExists(ident)
    message = rck.thrown(lambda: rck.catalog.loadView(ident), "NoSuchViewException")
    assert message.startswith(f"View does not exist: {ident}")


def test_loadViewThatAlreadyExistsAsTable(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    table_ident = rck.names.ident("ns", "table")
    catalog.createNamespace(table_ident.namespace())
    assert not catalog.tableExists(table_ident)
    catalog.buildTable(table_ident, j.VIEW_SCHEMA).create()
    assert catalog.tableExists(table_ident)
    assert not catalog.viewExists(table_ident)
    message = rck.thrown(lambda: catalog.loadView(table_ident), "NoSuchViewException")
    assert message.startswith("View does not exist")


def test_loadTableThatAlreadyExistsAsView(rck: RCK) -> None:
    catalog = rck.catalog
    view_ident = rck.names.ident("ns", "table")
    catalog.createNamespace(view_ident.namespace())
    assert not catalog.viewExists(view_ident)
    rck.create_view(view_ident)
    assert catalog.viewExists(view_ident)
    assert not catalog.tableExists(view_ident)
    message = rck.thrown(lambda: catalog.loadTable(view_ident), "NoSuchTableException")
    assert message.startswith("Table does not exist")


def test_createViewThatAlreadyExistsAsTable(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    table_ident = rck.names.ident("ns", "table")
    catalog.createNamespace(table_ident.namespace())
    assert not catalog.tableExists(table_ident)
    catalog.buildTable(table_ident, j.VIEW_SCHEMA).create()
    assert catalog.tableExists(table_ident)
    message = rck.thrown(
        lambda: (
            catalog.buildView(table_ident)
            .withSchema(j.VIEW_OTHER_SCHEMA)
            .withDefaultNamespace(table_ident.namespace())
            .withQuery("spark", "select * from ns.tbl")
            .create()
        ),
        "AlreadyExistsException",
    )
    assert message.startswith(f"Table with same name already exists: {table_ident}")


def test_createTableThatAlreadyExistsAsView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    view_ident = rck.names.ident("ns", "view")
    catalog.createNamespace(view_ident.namespace())
    assert not catalog.viewExists(view_ident)
    rck.create_view(view_ident)
    assert catalog.viewExists(view_ident)
    message = rck.thrown(lambda: catalog.buildTable(view_ident, j.VIEW_SCHEMA).create(), "AlreadyExistsException")
    assert message.startswith(f"View with same name already exists: {view_ident}")


def test_createTableViaTransactionThatAlreadyExistsAsView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    view_ident = rck.names.ident("ns", "view")
    catalog.createNamespace(view_ident.namespace())
    assert not catalog.viewExists(view_ident)
    transaction = catalog.buildTable(view_ident, j.VIEW_SCHEMA).createTransaction()
    rck.create_view(view_ident)
    assert catalog.viewExists(view_ident)
    message = rck.thrown(transaction.commitTransaction, "AlreadyExistsException")
    assert message.startswith(f"View with same name already exists: {view_ident}")


def test_replaceTableViaTransactionThatAlreadyExistsAsView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    view_ident = rck.names.ident("ns", "view")
    catalog.createNamespace(view_ident.namespace())
    assert not catalog.viewExists(view_ident)
    rck.create_view(view_ident)
    assert catalog.viewExists(view_ident)
    message = rck.thrown(
        lambda: catalog.buildTable(view_ident, j.VIEW_SCHEMA).replaceTransaction().commitTransaction(),
        "AlreadyExistsException",
    )
    assert message.startswith(f"View with same name already exists: {view_ident}")


def test_createOrReplaceTableViaTransactionThatAlreadyExistsAsView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    view_ident = rck.names.ident("ns", "view")
    catalog.createNamespace(view_ident.namespace())
    assert not catalog.viewExists(view_ident)
    rck.create_view(view_ident)
    assert catalog.viewExists(view_ident)
    message = rck.thrown(
        lambda: catalog.buildTable(view_ident, j.VIEW_SCHEMA).createOrReplaceTransaction().commitTransaction(),
        "AlreadyExistsException",
    )
    assert message.startswith(f"View with same name already exists: {view_ident}")


def test_replaceViewThatAlreadyExistsAsTable(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    table_ident = rck.names.ident("ns", "table")
    catalog.createNamespace(table_ident.namespace())
    assert not catalog.tableExists(table_ident)
    catalog.buildTable(table_ident, j.VIEW_SCHEMA).create()
    assert catalog.tableExists(table_ident)
    message = rck.thrown(
        lambda: (
            catalog.buildView(table_ident)
            .withSchema(j.VIEW_OTHER_SCHEMA)
            .withDefaultNamespace(table_ident.namespace())
            .withQuery("spark", "select * from ns.tbl")
            .replace()
        ),
        "AlreadyExistsException",
    )
    assert f"Table with same name already exists: {table_ident}" in message


def test_createOrReplaceViewThatAlreadyExistsAsTable(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    table_ident = rck.names.ident("ns", "table")
    catalog.createNamespace(table_ident.namespace())
    assert not catalog.tableExists(table_ident)
    catalog.buildTable(table_ident, j.VIEW_SCHEMA).create()
    assert catalog.tableExists(table_ident)
    message = rck.thrown(
        lambda: (
            catalog.buildView(table_ident)
            .withSchema(j.VIEW_OTHER_SCHEMA)
            .withDefaultNamespace(table_ident.namespace())
            .withQuery("spark", "select * from ns.tbl")
            .createOrReplace()
        ),
        "AlreadyExistsException",
    )
    assert message.startswith(f"Table with same name already exists: {table_ident}")


def test_registerTableThatAlreadyExistsAsView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "tbl")
    catalog.createNamespace(identifier.namespace())
    catalog.createTable(identifier, j.VIEW_SCHEMA)
    assert catalog.tableExists(identifier)
    metadata_location = catalog.loadTable(identifier).operations().current().metadataFileLocation()
    catalog.dropTable(identifier, False)  # don't purge the metadata
    assert not catalog.tableExists(identifier)
    rck.create_view(identifier)
    assert catalog.viewExists(identifier)
    message = rck.thrown(lambda: catalog.registerTable(identifier, metadata_location), "AlreadyExistsException")
    assert message.startswith(f"View with same name already exists: {identifier}")
    assert not catalog.tableExists(identifier)
    assert catalog.dropView(identifier)


# ViewCatalogTests: create ----------------------------------------------------------------------
def test_basicCreateView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view = rck.create_view(identifier)
    assert view is not None
    assert catalog.viewExists(identifier)
    assert view.operations().current().metadataFileLocation() is not None
    assert view.name() == j.ice.view.ViewUtil.fullViewName(catalog.name(), identifier)
    history = list(view.history())
    assert len(history) == 1
    assert history[0].versionId() == 1
    assert view.schema().schemaId() == 0
    assert view.schema().asStruct().equals(j.VIEW_SCHEMA.asStruct())
    assert view.currentVersion().operation() == "create"
    assert set(view.schemas().keySet()) == {0}
    assert same_elements(j.to_list(view.versions()), [view.currentVersion()])
    current = view.currentVersion()
    expected = j.view_version(current, 1, 0, identifier.namespace(), [j.sql("spark", "select * from ns.tbl")])
    assert current.equals(expected)
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_defaultViewProperties(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .withProperty("key2", "catalog-overridden-key2")
        .withProperty("prop1", "val1")
        .create()
    )
    assert view is not None
    assert (
        props(view.properties()).items()
        >= {
            "key1": "catalog-default-key1",
            "key2": "catalog-overridden-key2",
            "prop1": "val1",
        }.items()
    )
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_overrideViewProperties(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .withProperty("key4", "catalog-overridden-key4")
        .withProperty("prop1", "val1")
        .create()
    )
    assert view is not None
    assert (
        props(view.properties()).items()
        >= {
            "key1": "catalog-default-key1",
            "key2": "catalog-default-key2",
            "key3": "catalog-override-key3",
            "key4": "catalog-override-key4",
            "prop1": "val1",
        }.items()
    )
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_completeCreateView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    location = rck.view_location(str(identifier.namespace()), str(identifier.name()))
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .withQuery("trino", "select * from ns.tbl using X")
        .withProperty("prop1", "val1")
        .withProperty("prop2", "val2")
        .withLocation(location)
        .create()
    )
    assert view is not None
    assert catalog.viewExists(identifier)
    assert view.operations().current().metadataFileLocation() is not None
    assert view.location() == location
    assert view.uuid().equals(j.jvm.java.util.UUID.fromString(view.operations().current().uuid()))
    assert view.name() == j.ice.view.ViewUtil.fullViewName(catalog.name(), identifier)
    assert props(view.properties()).items() >= {"prop1": "val1", "prop2": "val2"}.items()
    history = list(view.history())
    assert len(history) == 1
    assert history[0].versionId() == 1
    assert view.currentVersion().operation() == "create"
    assert view.schema().schemaId() == 0
    assert view.schema().asStruct().equals(j.VIEW_SCHEMA.asStruct())
    assert set(view.schemas().keySet()) == {0}
    assert same_elements(j.to_list(view.versions()), [view.currentVersion()])
    current = view.currentVersion()
    expected = j.view_version(
        current,
        1,
        0,
        identifier.namespace(),
        [j.sql("spark", "select * from ns.tbl"), j.sql("trino", "select * from ns.tbl using X")],
        default_catalog=catalog.name(),
    )
    assert current.equals(expected)
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_createViewWithCustomMetadataLocation(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    location = rck.view_location()
    custom_location = rck.view_location("custom-location")
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .withProperty("write.metadata.path", custom_location)
        .withLocation(location)
        .create()
    )
    assert view is not None
    assert catalog.viewExists(identifier)
    assert props(view.properties()).get("write.metadata.path") == custom_location
    metadata_location = view.operations().current().metadataFileLocation()
    assert metadata_location is not None
    assert metadata_location.startswith(custom_location)


def test_createViewErrorCases(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    sql = "select * from ns.tbl"
    message = rck.thrown(lambda: catalog.buildView(identifier).create(), "IllegalStateException")
    assert message == "Cannot create view without specifying a query"
    message = rck.thrown(
        lambda: catalog.buildView(identifier).withQuery("trino", sql).create(), "IllegalStateException"
    )
    assert message == "Cannot create view without specifying schema"
    message = rck.thrown(
        lambda: catalog.buildView(identifier).withQuery("trino", sql).withSchema(j.VIEW_SCHEMA).create(),
        "IllegalStateException",
    )
    assert message == "Cannot create view without specifying a default namespace"
    message = rck.thrown(
        lambda: (
            catalog.buildView(identifier)
            .withSchema(j.VIEW_SCHEMA)
            .withDefaultNamespace(identifier.namespace())
            .withQuery("trino", sql)
            .withQuery("trino", sql)
            .create()
        ),
        "IllegalArgumentException",
    )
    assert "Invalid view version: Cannot add multiple queries for dialect trino" in message


def test_createViewThatAlreadyExists(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    assert rck.create_view(identifier) is not None
    assert catalog.viewExists(identifier)
    message = rck.thrown(
        lambda: (
            catalog.buildView(identifier)
            .withSchema(j.VIEW_OTHER_SCHEMA)
            .withQuery("spark", "select * from ns.tbl")
            .withDefaultNamespace(identifier.namespace())
            .create()
        ),
        "AlreadyExistsException",
    )
    assert message.startswith(f"View already exists: {identifier}")


def test_createViewConflict(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view_builder = catalog.buildView(identifier)
    rck.create_view(identifier, dialect="trino")
    assert catalog.viewExists(identifier)
    message = rck.thrown(
        lambda: (
            view_builder.withQuery("trino", "select * from ns.tbl")
            .withSchema(j.VIEW_SCHEMA)
            .withDefaultNamespace(identifier.namespace())
            .create()
        ),
        "AlreadyExistsException",
    )
    assert f"View already exists: {identifier}" in message


# ViewCatalogTests: rename and drop -------------------------------------------------------------
def _assert_same_view_metadata(j: Java, actual: Any, expected: Any) -> None:
    """AssertJ's usingRecursiveComparison().ignoringFieldsOfTypes(Schema.class) on ViewMetadata."""
    assert actual.uuid() == expected.uuid()
    assert actual.formatVersion() == expected.formatVersion()
    assert actual.location() == expected.location()
    assert actual.currentVersionId() == expected.currentVersionId()
    assert actual.versions().equals(expected.versions())
    assert actual.history().equals(expected.history())
    assert actual.properties().equals(expected.properties())
    assert actual.changes().size() == expected.changes().size()
    assert actual.metadataFileLocation() == expected.metadataFileLocation()
    assert actual.schemas().size() == expected.schemas().size()


def _rename_view(rck: RCK, from_ident: Any, to_ident: Any) -> None:
    catalog, j = rck.catalog, rck.java
    assert not catalog.viewExists(from_ident)
    view = rck.create_view(from_ident)
    assert catalog.viewExists(from_ident)
    original = view.operations().current()
    assert original.metadataFileLocation() is not None
    catalog.renameView(from_ident, to_ident)
    assert not catalog.viewExists(from_ident), "View should not exist with old name"
    assert catalog.viewExists(to_ident), "View should exist with new name"
    renamed = catalog.loadView(to_ident)
    _assert_same_view_metadata(j, renamed.operations().current(), original)  # unchanged by the rename
    assert not catalog.dropView(from_ident)
    assert catalog.dropView(to_ident)
    assert not catalog.viewExists(to_ident)


def test_renameView(rck: RCK) -> None:
    source = rck.names.ident("ns", "view")
    rck.catalog.createNamespace(source.namespace())
    _rename_view(rck, source, rck.java.TableIdentifier.of(source.namespace(), "renamedView"))


def test_renameViewUsingDifferentNamespace(rck: RCK) -> None:
    source = rck.names.ident("ns", "view")
    target = rck.names.ident("other_ns", "renamedView")
    rck.catalog.createNamespace(source.namespace())
    rck.catalog.createNamespace(target.namespace())
    _rename_view(rck, source, target)


def test_renameViewNamespaceMissing(rck: RCK) -> None:
    catalog = rck.catalog
    source = rck.names.ident("ns", "view")
    target = rck.names.ident("non_existing", "renamedView")
    catalog.createNamespace(source.namespace())
    assert not catalog.viewExists(source)
    rck.create_view(source)
    assert catalog.viewExists(source)
    message = rck.thrown(lambda: catalog.renameView(source, target), "NoSuchNamespaceException")
    assert f"Namespace does not exist: {target.namespace()}" in message


def test_renameViewSourceMissing(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    source = rck.names.ident("ns", "non_existing")
    target = j.TableIdentifier.of(source.namespace(), "renamedView")
    catalog.createNamespace(source.namespace())
    assert not catalog.viewExists(source)
    message = rck.thrown(lambda: catalog.renameView(source, target), "NoSuchViewException")
    assert "View does not exist" in message


def test_renameViewTargetAlreadyExistsAsView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    view_one = rck.names.ident("ns", "viewOne")
    view_two = j.TableIdentifier.of(view_one.namespace(), "viewTwo")
    catalog.createNamespace(view_one.namespace())
    for identifier in (view_one, view_two):
        assert not catalog.viewExists(identifier)
        rck.create_view(identifier)
        assert catalog.viewExists(identifier)
    message = rck.thrown(lambda: catalog.renameView(view_one, view_two), "AlreadyExistsException")
    assert f"Cannot rename {view_one} to {view_two}. View already exists" in message


def test_renameViewTargetAlreadyExistsAsTable(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    view_ident = rck.names.ident("ns", "view")
    table_ident = j.TableIdentifier.of(view_ident.namespace(), "table")
    catalog.createNamespace(table_ident.namespace())
    assert not catalog.tableExists(table_ident)
    catalog.buildTable(table_ident, j.VIEW_SCHEMA).create()
    assert catalog.tableExists(table_ident)
    assert not catalog.viewExists(view_ident)
    rck.create_view(view_ident)
    assert catalog.viewExists(view_ident)
    message = rck.thrown(lambda: catalog.renameView(view_ident, table_ident), "AlreadyExistsException")
    assert f"Cannot rename {view_ident} to {table_ident}. Table already exists" in message


def test_renameTableTargetAlreadyExistsAsView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    view_ident = rck.names.ident("ns", "view")
    table_ident = j.TableIdentifier.of(view_ident.namespace(), "table")
    catalog.createNamespace(table_ident.namespace())
    assert not catalog.tableExists(table_ident)
    catalog.buildTable(table_ident, j.VIEW_SCHEMA).create()
    assert catalog.tableExists(table_ident)
    assert not catalog.viewExists(view_ident)
    rck.create_view(view_ident)
    assert catalog.viewExists(view_ident)
    message = rck.thrown(lambda: catalog.renameTable(table_ident, view_ident), "AlreadyExistsException")
    assert f"Cannot rename {table_ident} to {view_ident}. View already exists" in message


def test_dropNonEmptyNamespace(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    view_ident = rck.names.ident("ns", "view")
    table_ident = j.TableIdentifier.of(view_ident.namespace(), "tbl")
    assert not catalog.namespaceExists(view_ident.namespace())
    catalog.createNamespace(view_ident.namespace())
    assert catalog.namespaceExists(view_ident.namespace())
    catalog.buildTable(table_ident, j.VIEW_SCHEMA).create()
    assert catalog.tableExists(table_ident)
    (
        catalog.buildView(view_ident)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(view_ident.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .create()
    )
    assert catalog.viewExists(view_ident)
    # dropping the namespace fails: the table and the view have not been dropped
    message = rck.thrown(lambda: catalog.dropNamespace(view_ident.namespace()), "NamespaceNotEmptyException")
    assert "is not empty" in message
    catalog.dropTable(table_ident)
    assert not catalog.tableExists(table_ident)
    # dropping the namespace fails: the view has not been dropped
    message = rck.thrown(lambda: catalog.dropNamespace(view_ident.namespace()), "NamespaceNotEmptyException")
    assert "is not empty" in message
    catalog.dropView(view_ident)
    assert not catalog.viewExists(view_ident)
    assert catalog.dropNamespace(view_ident.namespace())
    assert not catalog.namespaceExists(view_ident.namespace())


# ViewCatalogTests: listing ---------------------------------------------------------------------
def test_listViews(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    ns1, ns2 = rck.names.ns("ns1"), rck.names.ns("ns2")
    view1 = j.TableIdentifier.of(ns1, "view1")
    view2 = j.TableIdentifier.of(ns2, "view2")
    view3 = j.TableIdentifier.of(ns2, "view3")
    catalog.createNamespace(ns1)
    catalog.createNamespace(ns2)

    def views(namespace: Any) -> list[Any]:
        return list(catalog.listViews(namespace))

    assert views(ns1) == []
    assert views(ns2) == []
    rck.create_view(view1, "select * from ns1.tbl")
    assert views(ns1) == [view1]
    assert views(ns2) == []
    rck.create_view(view2, "select * from ns1.tbl")
    assert views(ns1) == [view1]
    assert views(ns2) == [view2]
    rck.create_view(view3)
    assert views(ns1) == [view1]
    assert same_elements(catalog.listViews(ns2), [view2, view3])
    assert catalog.dropView(view2)
    assert views(ns1) == [view1]
    assert views(ns2) == [view3]
    assert catalog.dropView(view3)
    assert views(ns1) == [view1]
    assert views(ns2) == []
    assert catalog.dropView(view1)
    assert views(ns1) == []
    assert views(ns2) == []


def test_listViewsAndTables(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    ns = rck.names.ns("ns")
    table_ident = j.TableIdentifier.of(ns, "table")
    view_ident = j.TableIdentifier.of(ns, "view")
    catalog.createNamespace(ns)
    assert list(catalog.listViews(ns)) == []
    assert list(catalog.listTables(ns)) == []
    catalog.buildTable(table_ident, j.VIEW_SCHEMA).create()
    assert list(catalog.listViews(ns)) == []
    assert list(catalog.listTables(ns)) == [table_ident]
    rck.create_view(view_ident, "select * from ns1.tbl")
    assert list(catalog.listViews(ns)) == [view_ident]
    assert list(catalog.listTables(ns)) == [table_ident]
    assert catalog.dropTable(table_ident)
    assert list(catalog.listViews(ns)) == [view_ident]
    assert list(catalog.listTables(ns)) == []
    assert catalog.dropView(view_ident)
    assert list(catalog.listViews(ns)) == []
    assert list(catalog.listTables(ns)) == []


# ViewCatalogTests: replace, update and versions ------------------------------------------------
@pytest.mark.parametrize("use_create_or_replace", [False, True])
def test_createOrReplaceView(rck: RCK, use_create_or_replace: bool) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view_builder = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withQuery("spark", "select * from ns.tbl")
        .withProperty("prop1", "val1")
        .withProperty("prop2", "val2")
    )
    view = view_builder.createOrReplace() if use_create_or_replace else view_builder.create()
    assert catalog.viewExists(identifier)
    assert view.operations().current().metadataFileLocation() is not None
    view_version = view.currentVersion()
    assert list(view_version.representations()) == [j.sql("spark", "select * from ns.tbl")]

    view_builder = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_OTHER_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withQuery("trino", "select count(*) from ns.tbl")
        .withProperty("replacedProp1", "val1")
        .withProperty("replacedProp2", "val2")
        .withProperty("replace.drop-dialect.allowed", "true")
    )
    replaced = view_builder.createOrReplace() if use_create_or_replace else view_builder.replace()

    assert replaced.name() == j.ice.view.ViewUtil.fullViewName(catalog.name(), identifier)
    assert replaced.operations().current().metadataFileLocation() is not None
    assert (
        props(replaced.properties()).items()
        >= {
            "prop1": "val1",
            "prop2": "val2",
            "replacedProp1": "val1",
            "replacedProp2": "val2",
        }.items()
    )
    assert [entry.versionId() for entry in replaced.history()] == [1, 2]
    assert replaced.schema().schemaId() == 1
    assert replaced.schema().asStruct().equals(j.VIEW_OTHER_SCHEMA.asStruct())
    assert set(replaced.schemas().keySet()) == {0, 1}
    replaced_version = replaced.currentVersion()
    assert j.to_list(replaced.versions()) == [view_version, replaced_version]
    assert replaced_version is not None
    assert replaced_version.versionId() == 2
    assert replaced_version.schemaId() == 1
    assert replaced_version.operation() == "replace"
    assert list(replaced_version.representations()) == [j.sql("trino", "select count(*) from ns.tbl")]
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_replaceViewErrorCases(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    sql = "select * from ns.tbl"
    rck.create_view(identifier, sql, "trino")
    assert catalog.viewExists(identifier)
    message = rck.thrown(lambda: catalog.buildView(identifier).replace(), "IllegalStateException")
    assert message == "Cannot replace view without specifying a query"
    message = rck.thrown(
        lambda: catalog.buildView(identifier).withQuery("trino", sql).replace(), "IllegalStateException"
    )
    assert message == "Cannot replace view without specifying schema"
    message = rck.thrown(
        lambda: catalog.buildView(identifier).withQuery("trino", sql).withSchema(j.VIEW_SCHEMA).replace(),
        "IllegalStateException",
    )
    assert message == "Cannot replace view without specifying a default namespace"
    missing = j.TableIdentifier.of(identifier.namespace(), "non_existing")
    message = rck.thrown(
        lambda: (
            catalog.buildView(missing)
            .withQuery("trino", sql)
            .withSchema(j.VIEW_SCHEMA)
            .withDefaultNamespace(identifier.namespace())
            .replace()
        ),
        "NoSuchViewException",
    )
    assert message.startswith(f"View does not exist: {missing}")
    message = rck.thrown(
        lambda: (
            catalog.buildView(identifier)
            .withSchema(j.VIEW_SCHEMA)
            .withDefaultNamespace(identifier.namespace())
            .withQuery("trino", sql)
            .withQuery("trino", sql)
            .replace()
        ),
        "IllegalArgumentException",
    )
    assert message == "Invalid view version: Cannot add multiple queries for dialect trino"


def test_updateViewProperties(rck: RCK) -> None:
    catalog = rck.catalog
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view = rck.create_view(identifier)
    view_version = view.currentVersion()
    view.updateProperties().set("key1", "val1").set("key2", "val2").remove("non-existing").commit()
    updated = catalog.loadView(identifier)
    assert props(updated.properties()).items() >= {"key1": "val1", "key2": "val2"}.items()
    # history and view versions stay the same after updating view properties
    assert updated.history().size() == 1
    assert updated.history().equals(view.history())
    assert j_versions(rck, updated) == [view_version]
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def j_versions(rck: RCK, view: Any) -> list[Any]:
    return rck.java.to_list(view.versions())


def test_updateViewPropertiesErrorCases(rck: RCK) -> None:
    catalog = rck.catalog
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    rck.create_view(identifier)
    assert catalog.viewExists(identifier)
    message = rck.thrown(
        lambda: catalog.loadView(identifier).updateProperties().set(None, "new-val1").commit(),
        "IllegalArgumentException",
    )
    assert message == "Invalid key: null"
    message = rck.thrown(
        lambda: catalog.loadView(identifier).updateProperties().set("key1", None).commit(),
        "IllegalArgumentException",
    )
    assert message == "Invalid value: null"
    message = rck.thrown(
        lambda: catalog.loadView(identifier).updateProperties().remove(None).commit(), "IllegalArgumentException"
    )
    assert message == "Invalid key: null"
    message = rck.thrown(
        lambda: (
            catalog.loadView(identifier)
            .updateProperties()
            .set("key1", "x")
            .set("key3", "y")
            .remove("key2")
            .set("key2", "z")
            .commit()
        ),
        "IllegalArgumentException",
    )
    assert message == "Cannot remove and update the same key: key2"


def test_replaceViewVersion(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    spark_sql = j.sql("spark", "select * from ns.tbl")
    trino_sql = j.sql("trino", "select * from ns.tbl")
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withQuery(trino_sql.dialect(), trino_sql.sql())
        .withQuery(spark_sql.dialect(), spark_sql.sql())
        .withProperty("replace.drop-dialect.allowed", "true")
        .create()
    )
    assert catalog.viewExists(identifier)
    view_version = view.currentVersion()
    assert list(view_version.representations()) == [trino_sql, spark_sql]

    # uses a different schema and view representation
    (
        view.replaceVersion()
        .withSchema(j.VIEW_OTHER_SCHEMA)
        .withQuery(trino_sql.dialect(), trino_sql.sql())
        .withDefaultCatalog("default")
        .withDefaultNamespace(identifier.namespace())
        .commit()
    )

    updated = catalog.loadView(identifier)
    history = list(updated.history())
    assert len(history) == 2
    assert history[0].versionId() == view_version.versionId()
    assert history[1].versionId() == updated.currentVersion().versionId()
    assert set(updated.schemas().keySet()) == {0, 1}
    assert j_versions(rck, updated) == [view_version, updated.currentVersion()]
    updated_version = updated.currentVersion()
    assert updated_version is not None
    assert updated_version.versionId() == view_version.versionId() + 1
    assert updated_version.operation() == "replace"
    assert list(updated_version.representations()) == [trino_sql]
    assert updated_version.schemaId() == 1
    assert updated_version.defaultCatalog() == "default"
    assert updated_version.defaultNamespace().equals(identifier.namespace())
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_replaceViewVersionByUpdatingSQLForDialect(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    spark_sql = j.sql("spark", "select * from ns.tbl")
    view = rck.create_view(identifier, spark_sql.sql(), spark_sql.dialect())
    assert catalog.viewExists(identifier)
    view_version = view.currentVersion()
    assert list(view_version.representations()) == [spark_sql]
    updated_spark = j.sql("spark", "select * from ns.updated_tbl")
    # only update the SQL for spark
    (
        view.replaceVersion()
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withQuery(updated_spark.dialect(), updated_spark.sql())
        .commit()
    )
    updated = catalog.loadView(identifier)
    history = list(updated.history())
    assert len(history) == 2
    assert history[0].versionId() == view_version.versionId()
    assert history[1].versionId() == updated.currentVersion().versionId()
    assert j_versions(rck, updated) == [view_version, updated.currentVersion()]
    assert list(updated.currentVersion().representations()) == [updated_spark]
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_replaceViewVersionErrorCases(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    sql = "select * from ns.tbl"
    view = rck.create_view(identifier, sql, "trino")
    assert catalog.viewExists(identifier)
    message = rck.thrown(lambda: view.replaceVersion().commit(), "IllegalStateException")
    assert message == "Cannot replace view without specifying a query"
    message = rck.thrown(
        lambda: view.replaceVersion().withQuery("trino", sql).withDefaultNamespace(identifier.namespace()).commit(),
        "IllegalStateException",
    )
    assert message == "Cannot replace view without specifying schema"
    message = rck.thrown(
        lambda: view.replaceVersion().withQuery("trino", sql).withSchema(j.VIEW_SCHEMA).commit(),
        "IllegalStateException",
    )
    assert message == "Cannot replace view without specifying a default namespace"
    message = rck.thrown(
        lambda: (
            view.replaceVersion()
            .withQuery("trino", sql)
            .withSchema(j.VIEW_SCHEMA)
            .withDefaultNamespace(identifier.namespace())
            .withQuery("trino", sql)
            .withQuery("trino", sql)
            .commit()
        ),
        "IllegalArgumentException",
    )
    assert message == "Invalid view version: Cannot add multiple queries for dialect trino"


def test_updateViewPropertiesConflict(rck: RCK) -> None:
    catalog = rck.catalog
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view = rck.create_view(identifier, dialect="trino")
    assert catalog.viewExists(identifier)
    update_view_properties = view.updateProperties()
    # drop the view, then use the updateProperties API
    catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)
    message = rck.thrown(lambda: update_view_properties.set("key1", "val1").commit(), "NoSuchViewException")
    assert f"View does not exist: {identifier}" in message


def test_replaceViewVersionConflict(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view = rck.create_view(identifier, dialect="trino")
    assert catalog.viewExists(identifier)
    replace_view_version = view.replaceVersion()
    # drop the view, then use the replaceVersion API
    catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)
    message = rck.thrown(
        lambda: (
            replace_view_version.withQuery("trino", "select * from ns.tbl")
            .withSchema(j.VIEW_SCHEMA)
            .withDefaultNamespace(identifier.namespace())
            .commit()
        ),
        "NoSuchViewException",
    )
    assert f"View does not exist: {identifier}" in message


def test_replaceViewConflict(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    rck.create_view(identifier, dialect="trino")
    assert catalog.viewExists(identifier)
    view_builder = catalog.buildView(identifier)
    catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)
    # the view was dropped concurrently
    message = rck.thrown(
        lambda: (
            view_builder.withQuery("trino", "select * from ns.tbl")
            .withSchema(j.VIEW_SCHEMA)
            .withDefaultNamespace(identifier.namespace())
            .replace()
        ),
        "NoSuchViewException",
    )
    assert message.startswith(f"View does not exist: {identifier}")


def test_createAndReplaceViewWithLocation(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    location = rck.view_location(str(identifier.namespace()), str(identifier.name()))
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withQuery("trino", "select * from ns.tbl")
        .withLocation(location)
        .create()
    )
    assert catalog.viewExists(identifier)
    assert view.location() == location
    updated_location = rck.view_location("updated", "ns", "view")
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withQuery("trino", "select * from ns.tbl")
        .withLocation(updated_location)
        .replace()
    )
    assert view.location() == updated_location
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_updateViewLocation(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    location = rck.view_location(str(identifier.namespace()), str(identifier.name()))
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withQuery("trino", "select * from ns.tbl")
        .withLocation(location)
        .create()
    )
    assert catalog.viewExists(identifier)
    assert view.location() == location
    updated_location = rck.view_location("updated", "ns", "view")
    view.updateLocation().setLocation(updated_location).commit()
    updated = catalog.loadView(identifier)
    assert updated.location() == updated_location
    # history and view versions stay the same after updating the location
    assert updated.history().size() == 1
    assert updated.history().equals(view.history())
    assert j_versions(rck, updated) == [view.currentVersion()]
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_updateViewLocationConflict(rck: RCK) -> None:
    catalog = rck.catalog
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view = rck.create_view(identifier, dialect="trino")
    assert catalog.viewExists(identifier)
    # the new location must be non-null
    message = rck.thrown(lambda: view.updateLocation().setLocation(None).commit(), "IllegalStateException")
    assert message == "Invalid view location: null"
    update_view_location = view.updateLocation()
    catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)
    # the view was dropped concurrently
    message = rck.thrown(lambda: update_view_location.setLocation("new-location").commit(), "NoSuchViewException")
    assert f"View does not exist: {identifier}" in message


def test_concurrentReplaceViewVersion(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    assert not catalog.viewExists(identifier)
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withQuery("trino", "select * from ns.tbl")
        .withProperty("replace.drop-dialect.allowed", "true")
        .create()
    )
    assert catalog.viewExists(identifier)
    replace_view_version_one = (
        view.replaceVersion()
        .withQuery("trino", "select count(id) from ns.tbl")
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
    )
    replace_view_version_two = (
        view.replaceVersion()
        .withQuery("spark", "select count(some_id) from ns.tbl")
        .withSchema(j.VIEW_OTHER_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
    )

    def internal_apply(replace: Any) -> Any:
        """((ViewVersionReplace) replace).internalApply(), which is package-private."""
        method = replace.getClass().getDeclaredMethod("internalApply", j.array(j.jvm.java.lang.Class, []))
        method.setAccessible(True)
        return method.invoke(replace, j.array(j.jvm.java.lang.Object, []))

    # simulate a concurrent replace of the view version
    view_ops = view.operations()
    current = view_ops.current()
    trino_update = internal_apply(replace_view_version_two)
    spark_update = internal_apply(replace_view_version_one)
    view_ops.commit(current, trino_update)
    # with server-side retry, the stale commit succeeds and its changes are applied
    view_ops.commit(current, spark_update)

    updated = catalog.loadView(identifier)
    assert updated.currentVersion().versionId() == 3
    assert len(j_versions(rck, updated)) == 3
    namespace = identifier.namespace()
    v1, v2, v3 = updated.version(1), updated.version(2), updated.version(3)
    assert v1.equals(j.view_version(v1, 1, 0, namespace, [j.sql("trino", "select * from ns.tbl")]))
    assert v2.equals(j.view_version(v2, 2, 1, namespace, [j.sql("spark", "select count(some_id) from ns.tbl")]))
    assert v3.equals(j.view_version(v3, 3, 0, namespace, [j.sql("trino", "select count(id) from ns.tbl")]))


# ViewCatalogTests: dialects --------------------------------------------------------------------
def _two_dialect_view(rck: RCK, identifier: Any) -> Any:
    return (
        rck.catalog.buildView(identifier)
        .withSchema(rck.java.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(rck.catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .withQuery("trino", "select * from ns.tbl using X")
        .create()
    )


def test_testSqlForMultipleDialects(rck: RCK) -> None:
    identifier = rck.names.ident("ns", "view")
    rck.catalog.createNamespace(identifier.namespace())
    view = _two_dialect_view(rck, identifier)
    assert view.sqlFor("spark").sql() == "select * from ns.tbl"
    assert view.sqlFor("trino").sql() == "select * from ns.tbl using X"
    assert view.sqlFor("unknown-dialect").sql() == "select * from ns.tbl"


def test_testSqlForCaseInsensitive(rck: RCK) -> None:
    identifier = rck.names.ident("ns", "view")
    rck.catalog.createNamespace(identifier.namespace())
    view = _two_dialect_view(rck, identifier)
    assert view.sqlFor("SPARK").sql() == "select * from ns.tbl"
    assert view.sqlFor("TRINO").sql() == "select * from ns.tbl using X"


def test_testSqlForInvalidArguments(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .create()
    )
    assert rck.thrown(lambda: view.sqlFor(None), "IllegalArgumentException") == "Invalid dialect: null"
    assert rck.thrown(lambda: view.sqlFor(""), "IllegalArgumentException") == "Invalid dialect: (empty string)"


# ViewCatalogTests: register (the 1.10.2 client has no registerView: the request goes over httpx) ---
def test_registerView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    original_view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .withProperty("gc.enabled", "false")  # don't delete metadata when dropping the view
        .create()
    )
    ops = original_view.operations()
    metadata_location = str(ops.current().metadataFileLocation())
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier), "View must not exist"
    # view metadata still exists after dropping the view as gc is disabled (RESTViewOperations has no io())
    assert Path(urlparse(metadata_location).path).exists()

    rck.register_view(identifier, metadata_location)
    registered = catalog.loadView(identifier)
    assert registered is not None
    assert catalog.viewExists(identifier), "View must exist"
    assert registered.name() == j.ice.view.ViewUtil.fullViewName(catalog.name(), identifier)
    assert [entry.versionId() for entry in registered.history()] == [1]
    assert set(registered.schemas().keySet()) == {0}
    assert registered.schema().asStruct().equals(j.VIEW_SCHEMA.asStruct())
    assert registered.currentVersion().operation() == "create"
    assert j_versions(rck, registered) == [registered.currentVersion()]
    assert j_versions(rck, registered) == j_versions(rck, original_view)
    current = registered.currentVersion()
    expected = j.view_version(
        current,
        1,
        0,
        identifier.namespace(),
        [j.sql("spark", "select * from ns.tbl")],
        default_catalog=catalog.name(),
    )
    assert current.equals(expected)
    assert catalog.loadView(identifier) is not None
    assert catalog.dropView(identifier)
    assert not catalog.viewExists(identifier)


def test_registerExistingView(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .create()
    )
    metadata_location = str(view.operations().current().metadataFileLocation())
    with pytest.raises(RestError) as info:
        rck.register_view(identifier, metadata_location)
    assert (info.value.type, info.value.code) == ("AlreadyExistsException", 409)
    assert info.value.message.startswith(f"View already exists: {identifier}")
    assert catalog.dropView(identifier)


def test_registerViewThatAlreadyExistsAsTable(rck: RCK) -> None:
    catalog, j = rck.catalog, rck.java
    identifier = rck.names.ident("ns", "view")
    catalog.createNamespace(identifier.namespace())
    view = (
        catalog.buildView(identifier)
        .withSchema(j.VIEW_SCHEMA)
        .withDefaultNamespace(identifier.namespace())
        .withDefaultCatalog(catalog.name())
        .withQuery("spark", "select * from ns.tbl")
        .withProperty("gc.enabled", "false")  # don't delete metadata when dropping the view
        .create()
    )
    metadata_location = str(view.operations().current().metadataFileLocation())
    assert catalog.dropView(identifier)
    catalog.createTable(identifier, j.VIEW_SCHEMA)  # a table with the same name as the view
    with pytest.raises(RestError) as info:
        rck.register_view(identifier, metadata_location)
    assert (info.value.type, info.value.code) == ("AlreadyExistsException", 409)
    assert info.value.message.startswith(f"Table with same name already exists: {identifier}")
    assert catalog.dropTable(identifier)
