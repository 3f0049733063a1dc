"""Errors carry the facts they are about; catch LakeOrchestrationError for all of them."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration import LakeOrchestrationError
from lake_orchestration.datagen import generate_trips
from lake_orchestration.errors import InvalidTablePropertiesError, TableNotFoundError
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
try:
    HudiTable(str(scratch / "nowhere"))
except TableNotFoundError as err:
    print(type(err).__name__, "|", err.table_uri, "|", err)

path = scratch / "trips"
write_table(str(path), generate_trips(5), operation="bulk_insert",
            options=WriteOptions(table_name="trips", record_key_fields=("uuid",)))
props = path / ".hoodie" / "hoodie.properties"
props.write_text(props.read_text().replace("hoodie.table.name=trips", "hoodie.table.name=renamed"))
try:
    HudiTable(str(path))  # the checksum is CRC32 of "default.trips", not "default.renamed"
except InvalidTablePropertiesError as err:
    print(type(err).__name__, "|", err.detail)

try:
    HudiTable(str(path))
except LakeOrchestrationError as err:  # the root of the hierarchy
    assert isinstance(err, InvalidTablePropertiesError)
