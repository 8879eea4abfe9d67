"""Croissant 1.0 metadata (MLCommons' format for ML data sets) for an exported roadmap set, as the release
ships its own ``croissant.json``: the families file as one file object (its name, relative to the metadata,
and its SHA-256) and its records as the ``milestone_family`` record set (pid, parent_prompt, parent_answer,
parent_note: the release's fields). ``mlcroissant`` (the ``[croissant]`` extra) validates it and reads
the records back."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path

CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
FILE_NAME = "croissant.json"
RECORD_SET = "milestone_family"
# Croissant 1.0's own @context, as its example data sets and the release state it
CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/", "citeAs": "cr:citeAs", "column": "cr:column", "conformsTo": "dct:conformsTo",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "equivalentProperty": "cr:equivalentProperty", "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract", "field": "cr:field", "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath", "key": "cr:key", "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated",
    "replace": "cr:replace", "samplingRate": "cr:samplingRate", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}
FIELDS = {
    "pid": "Stable family identifier.",
    "parent_prompt": "The parent problem as the student reads it.",
    "parent_answer": "The parent problem's reference answer (LaTeX).",
    "parent_note": "The verifier's acceptance note for the reference answer.",
}


def metadata(families: Path, *, name: str, description: str, license_url: str | None = None,
             published: date | None = None, version: str = "1.0.0") -> dict:
    """The Croissant metadata of a families file (JSONL in the released record format)."""
    file_id = families.name
    fields = [{"@type": "cr:Field", "@id": f"{RECORD_SET}/{n}", "name": n, "description": d, "dataType": "sc:Text",
               "source": {"fileObject": {"@id": file_id}, "extract": {"column": n}}} for n, d in FIELDS.items()]
    return {
        "@context": CONTEXT, "@type": "sc:Dataset", "name": name, "description": description,
        "conformsTo": CONFORMS_TO, "version": version, "datePublished": (published or date.today()).isoformat(),
        **({"license": license_url} if license_url else {}),
        "distribution": [{"@type": "cr:FileObject", "@id": file_id, "name": file_id,
                          "description": "Milestone families in the released OracleLadder record format.",
                          "encodingFormat": "application/jsonlines", "contentUrl": file_id,
                          "sha256": hashlib.sha256(families.read_bytes()).hexdigest()}],
        "recordSet": [{"@type": "cr:RecordSet", "@id": RECORD_SET, "name": RECORD_SET,
                       "description": "One milestone family per record: a parent problem and its reference answer.",
                       "key": {"@id": f"{RECORD_SET}/pid"}, "field": fields}],
    }


def write_metadata(families: Path, *, name: str, description: str, license_url: str | None = None) -> Path:
    """``croissant.json`` beside the families file (its contentUrl is the file's name), published today;
    returns its path."""
    path = families.parent / FILE_NAME
    path.write_text(json.dumps(metadata(families, name=name, description=description, license_url=license_url),
                               indent=2))
    return path
