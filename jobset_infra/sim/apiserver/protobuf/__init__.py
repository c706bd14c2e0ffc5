"""Protobuf bodies for the built-in kinds: the generated modules (`generated/`, made by
`generate`) and the codec between Kubernetes' protobuf envelope and the sim's JSON (`codec`)."""

from jobset_infra.sim.apiserver.protobuf.codec import (
    CONTENT_TYPE,
    ProtobufError,
    can_encode,
    decode,
    encode,
    is_protobuf,
)

__all__ = ["CONTENT_TYPE", "ProtobufError", "can_encode", "decode", "encode", "is_protobuf"]
