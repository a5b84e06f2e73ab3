#!/usr/bin/python3
"""Independent reader of rollcpp's TensorBoard event files: TFRecord framing with both CRC32Cs
checked on every record (a bitwise CRC-32C here, not rollcpp's table), and each record parsed
with protobuf classes that protoc generated from tests/oracles/tfevent.proto. Fields a class
does not know (a wrong field number on our side) are errors. Run it with Debian's /usr/bin/python3
(python3-protobuf).

usage: read_tfevents.py PB2_DIR EVENT_FILE
prints one JSON object: {"records", "file_version", "scalars": [{step, tag, value, wall_time}],
"texts": [{step, tag, text}], "hparams": {name: value}, "hparams_start_time"}
"""
import json
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def unknown_fields(msg):
    try:
        from google.protobuf import unknown_fields as uf
        return len(uf.UnknownFieldSet(msg))
    except ImportError:
        return len(msg.UnknownFields())


def check_known(msg, where):
    if unknown_fields(msg):
        sys.exit(f"{where}: {type(msg).__name__} has fields the schema does not know")
    for field, value in msg.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        items = value.values() if field.message_type.GetOptions().map_entry else (
            value if field.label == field.LABEL_REPEATED else [value])
        for item in items:
            if hasattr(item, "ListFields"):
                check_known(item, where)


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    pos, n = 0, 0
    while pos < len(data):
        if len(data) - pos < 12:
            sys.exit(f"record {n} at byte {pos}: truncated header")
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if length_crc != masked(header):
            sys.exit(f"record {n} at byte {pos}: length CRC mismatch")
        body = data[pos + 12:pos + 12 + length]
        if len(body) != length or len(data) < pos + 16 + length:
            sys.exit(f"record {n} at byte {pos}: truncated data")
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if data_crc != masked(body):
            sys.exit(f"record {n} at byte {pos}: data CRC mismatch")
        yield n, body
        pos += 16 + length
        n += 1


def main():
    sys.path.insert(0, sys.argv[1])
    import tfevent_pb2 as pb

    out = {"records": 0, "file_version": None, "scalars": [], "texts": [], "hparams": None,
           "hparams_start_time": None}
    for n, body in records(sys.argv[2]):
        ev = pb.Event()
        ev.ParseFromString(body)
        check_known(ev, f"record {n}")
        out["records"] += 1
        if ev.WhichOneof("what") == "file_version":
            if n != 0:
                sys.exit(f"record {n}: file_version after the first record")
            out["file_version"] = ev.file_version
            continue
        if n == 0:
            sys.exit("record 0 is not the file_version event")
        for v in ev.summary.value:
            plugin = v.metadata.plugin_data.plugin_name
            if v.WhichOneof("value") == "simple_value":
                out["scalars"].append({"step": ev.step, "tag": v.tag, "value": v.simple_value,
                                       "wall_time": ev.wall_time})
            elif plugin == "text":
                t = v.tensor
                if t.dtype != 7 or [d.size for d in t.tensor_shape.dim] != [1] or len(t.string_val) != 1:
                    sys.exit(f"record {n}: text tensor of '{v.tag}' is not one DT_STRING")
                out["texts"].append({"step": ev.step, "tag": v.tag, "text": t.string_val[0].decode("utf-8")})
            elif plugin == "hparams":
                data = pb.HParamsPluginData()
                data.ParseFromString(v.metadata.plugin_data.content)
                check_known(data, f"record {n} hparams")
                if v.tag != "_hparams_/session_start_info" or data.WhichOneof("data") != "session_start_info":
                    sys.exit(f"record {n}: hparams value is not a session_start_info")
                info = data.session_start_info
                out["hparams"] = {k: getattr(x, x.WhichOneof("kind")) for k, x in info.hparams.items()}
                out["hparams_start_time"] = info.start_time_secs
            else:
                sys.exit(f"record {n}: value '{v.tag}' is neither a scalar, text nor hparams")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
