# moto_server for the chaos run, started as `launch.py -H 127.0.0.1 -p PORT` like moto_server.
#
# Three changes that make moto fast enough for a 10,000-event run and change nothing it answers:
#
# 1. No request log. werkzeug writes one line per request under a lock shared by every request
#    thread; with a few thousand requests a minute that lock is where the threads queue.
# 2. TransactWriteItems snapshots only the items it touches. moto deep-copies every table a
#    transaction names before applying it (to roll back a cancelled one), which costs time in
#    proportion to the table's size on every claim: hundreds of milliseconds once the table holds
#    the run's dedupe records. Here the items the transaction's operations name are read first and
#    put back (or deleted, if they did not exist) when the transaction is cancelled, which is the
#    same all-or-nothing outcome.
import copy
import logging
import sys
import threading

logging.getLogger("werkzeug").setLevel(logging.ERROR)

import moto.dynamodb.models as models  # noqa: E402
from moto.dynamodb.models.table import Table  # noqa: E402


class _CopyWithoutTables:
    """`copy` as moto.dynamodb.models sees it: a table is not copied (see above)."""

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, Table):
            return value
        return copy.deepcopy(value, memo)


models.copy = _CopyWithoutTables()
_transact_write_items = models.DynamoDBBackend.transact_write_items


def _key_of(backend, op_type, op):
    table = backend.get_table(op["TableName"])
    if op_type != "Put":
        return op["Key"]
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def transact_write_items(self, transact_items):
    before = []
    for item in transact_items:
        try:
            op_type, op = next(iter(item.items()))
            key = _key_of(self, op_type, op)
            current = self.get_item(op["TableName"], key)
            before.append((op["TableName"], key, None if current is None else copy.deepcopy(current.to_json()["Attributes"])))
        except Exception:
            # A malformed operation: moto's own code below answers it.
            pass
    try:
        return _transact_write_items(self, transact_items)
    except Exception:
        for table_name, key, attrs in reversed(before):
            if attrs is None:
                if self.get_item(table_name, key) is not None:
                    self.delete_item(table_name, key)
            else:
                self.put_item(table_name, attrs)
        raise


models.DynamoDBBackend.transact_write_items = transact_write_items

# 3. A Query on the table's own key reads only its partition. moto lists and sorts every item of
#    the table for each Query and then keeps those of the partition, which costs time in
#    proportion to the table's size on every history and thread lookup. Here the list a Query
#    starts from is the partition's items (moto then filters and sorts them as before: the same
#    answer). Per thread, so a Scan running meanwhile still sees the whole table.
_restrict = threading.local()
_all_items = Table.all_items
_query = Table.query


def all_items(self):
    if getattr(_restrict, "table", None) is self:
        partition = self.items.get(_restrict.hash_key)
        if partition is None:
            return []
        return list(partition.values()) if self.range_key_attr else [partition]
    return _all_items(self)


def query(self, hash_key, *args, **kwargs):
    # index_name is the eighth parameter (moto passes it by position).
    index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
    if hash_key is None or index_name is not None:
        return _query(self, hash_key, *args, **kwargs)
    _restrict.table, _restrict.hash_key = self, hash_key
    try:
        return _query(self, hash_key, *args, **kwargs)
    finally:
        _restrict.table = _restrict.hash_key = None


Table.all_items = all_items
Table.query = query

from moto.server import main  # noqa: E402

main(sys.argv[1:])
