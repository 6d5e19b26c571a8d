/*
 * ProtocolOracle: Apache Kafka's own protocol code, driven from Python, as the ground truth for kwire.
 *
 * kwire claims to speak Kafka's RPC protocol byte for byte. This program lets kwire's tests and
 * tools/check_specs.py check that claim against the classes Kafka generated from the same JSON specs
 * (kafka-clients.jar), with no reimplementation in between. Two modes:
 *
 *   java ProtocolOracle dump [FILE]
 *       Enumerates every message class Kafka generated into org.apache.kafka.common.message (the
 *       *Data classes of requests, responses and headers, and the other generated specs such as
 *       LeaderChangeMessage) and writes, for every supported version of each, the wire schema Kafka
 *       declares for it (the generated SCHEMAS array: ordered fields, their types and nullability,
 *       the tagged-field section with its tag numbers), plus the JSON that Kafka's generated
 *       JsonConverter writes for a freshly constructed instance (the defaults). Nested structs are
 *       described inline, each with its own defaults. The output is one JSON document (to FILE, or
 *       to stdout). Its layout is described at dump() below.
 *
 *   java ProtocolOracle serve
 *       A long-lived JSON-lines server on stdin/stdout (one JVM serves a whole test session). Every
 *       input line is one request object, or a JSON array of request objects (a batch); every output
 *       line is the matching reply, or the array of replies in the same order. Requests:
 *
 *         {"op": "encode", "message": "MetadataResponse", "version": 12, "json": {...}}
 *             x = MetadataResponseDataJsonConverter.read(json, 12), serialized at version 12.
 *             Reply: {"bytes": <base64 of x's wire bytes>,
 *                     "json": <MetadataResponseDataJsonConverter.write(x, 12)>,
 *                     "redecoded": <the same converter's JSON for new MetadataResponseData(bytes, 12)>}
 *         {"op": "decode", "message": "MetadataResponse", "version": 12, "bytes": <base64>}
 *             x = new MetadataResponseData(bytes, 12); every byte must be consumed.
 *             Reply: {"json": <MetadataResponseDataJsonConverter.write(x, 12)>}
 *         {"op": "reencode", "message": "MetadataResponse", "version": 12, "bytes": <base64>}
 *             x = new MetadataResponseData(bytes, 12), serialized again at version 12 (unknown tagged
 *             fields that x kept are written back, in the order they were read).
 *             Reply: {"bytes": <base64>, "json": <as decode>,
 *                     "unknownTags": [<tag numbers of x's top-level unknown tagged fields, as read>]}
 *         {"op": "frame", "message": "MetadataRequest", "version": 12, "json": {...},
 *          "correlationId": 7, "clientId": "kwire"}
 *             A whole size-prefixed frame as Kafka's network layer sends it: the int32 size, the
 *             request (or response) header in the version ApiKeys chooses for this API and version,
 *             then the message (RequestUtils.serialize, the body of SendBuilder's sends).
 *             Reply: {"bytes": <base64 of the frame>, "headerVersion": N}
 *         {"op": "apiKeys"}
 *             Every ApiKeys entry: {"apiKey", "name", "oldestVersion", "latestVersion" (unstable
 *             versions included), "requestHeaderVersions": [...], "responseHeaderVersions": [...]}
 *             (header versions indexed from oldestVersion).
 *         {"op": "dump"}
 *             Reply: the document that dump mode writes.
 *
 *       A request that fails gets {"error": "<exception class>: <message>"}; the server keeps going.
 *       End of input stops it.
 *
 * Only Kafka's public classes are called (the generated *Data classes and their JsonConverters,
 * ByteBufferAccessor, ObjectSerializationCache). Reflection is used to read the generated static
 * SCHEMAS and version bounds, to read the private tag map of a TaggedFields section, and to see the
 * instance fields of the generated classes: their names are the JSON names, and setting one to null
 * is how we learn whether a nested struct may be null at a version (Kafka's Schema objects do not
 * record that; the generated read/write code does).
 *
 * Compiled and started by tools/kafka_jars.py: compile_java("ProtocolOracle") and
 * java_command("ProtocolOracle", classes_dir).
 */

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.CompactArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.RequestUtils;
import org.apache.kafka.common.requests.ResponseHeader;
import org.apache.kafka.common.utils.AppInfoParser;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class ProtocolOracle {
    private static final String PACKAGE = "org.apache.kafka.common.message.";
    /** Kafka generates a top-level JsonConverter class next to every message class it generates. */
    private static final Pattern CONVERTER_CLASS =
        Pattern.compile("^org/apache/kafka/common/message/([A-Za-z0-9]+)JsonConverter\\.class$");
    /** Requests, responses and headers get a "Data" suffix on their class name; other specs do not. */
    private static final Pattern DATA_SUFFIXED = Pattern.compile("^(.*(Request|Response|Header))Data$");
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ProtocolOracle() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "";
        switch (mode) {
            case "dump":
                try (OutputStream out = args.length > 1
                        ? new FileOutputStream(args[1]) : System.out) {
                    MAPPER.writeValue(out, dump());
                }
                break;
            case "serve":
                serve();
                break;
            default:
                System.err.println("usage: ProtocolOracle dump [FILE] | ProtocolOracle serve");
                System.exit(2);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Finding the generated classes
    // ------------------------------------------------------------------------------------------

    /** Everything we need to drive one generated top-level message class, looked up once. */
    private static final class MessageInfo {
        final String name;                       // spec name, e.g. "MetadataResponse"
        final Class<?> dataClass;                // MetadataResponseData
        final Constructor<?> readConstructor;    // MetadataResponseData(Readable, short)
        final short lowest;                      // LOWEST_SUPPORTED_VERSION
        final short highest;                     // HIGHEST_SUPPORTED_VERSION
        final Schema[] schemas;                  // SCHEMAS, indexed by version

        MessageInfo(String name) throws ReflectiveOperationException {
            this.name = name;
            this.dataClass = Class.forName(PACKAGE + className(name));
            this.readConstructor = dataClass.getConstructor(
                org.apache.kafka.common.protocol.Readable.class, short.class);
            this.lowest = dataClass.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
            this.highest = dataClass.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
            this.schemas = (Schema[]) dataClass.getField("SCHEMAS").get(null);
        }

        void checkVersion(short version) {
            if (version < lowest || version > highest) {
                throw new IllegalArgumentException(name + " has no version " + version
                    + " (supported: " + lowest + "-" + highest + ")");
            }
        }
    }

    private static final Map<String, MessageInfo> MESSAGES = new HashMap<>();

    private static MessageInfo message(String name) throws ReflectiveOperationException {
        MessageInfo info = MESSAGES.get(name);
        if (info == null) {
            info = new MessageInfo(name);
            MESSAGES.put(name, info);
        }
        return info;
    }

    /**
     * The spec names of all message classes generated into the jar that holds Kafka's protocol code:
     * the *Data classes of requests, responses and headers (MetadataResponseData is the spec
     * "MetadataResponse") and the other generated specs, whose classes keep the spec name
     * (DefaultPrincipalData, LeaderChangeMessage, ConsumerProtocolAssignment...).
     */
    static List<String> messageNames() throws Exception {
        File jarPath = new File(ApiMessage.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> names = new ArrayList<>();
        try (JarFile jar = new JarFile(jarPath)) {
            for (Iterator<JarEntry> it = jar.entries().asIterator(); it.hasNext(); ) {
                Matcher m = CONVERTER_CLASS.matcher(it.next().getName());
                if (m.matches()) {
                    Matcher suffixed = DATA_SUFFIXED.matcher(m.group(1));
                    names.add(suffixed.matches() ? suffixed.group(1) : m.group(1));
                }
            }
        }
        Collections.sort(names);
        return names;
    }

    /** The generated class name for a spec name (see messageNames). */
    static String className(String specName) {
        boolean suffixed = specName.endsWith("Request") || specName.endsWith("Response")
            || specName.endsWith("Header");
        return suffixed ? specName + "Data" : specName;
    }

    /**
     * The JsonConverter that Kafka generated for a (possibly nested) struct class. Every nested struct
     * is a static member of its top-level *Data class, and its converter is the matching static member
     * of the top-level converter: MetadataResponseData$MetadataResponseTopic is handled by
     * MetadataResponseDataJsonConverter$MetadataResponseTopicJsonConverter.
     */
    private static Class<?> converterFor(Class<?> struct) throws ClassNotFoundException {
        Class<?> top = struct;
        while (top.getEnclosingClass() != null) {
            top = top.getEnclosingClass();
        }
        String name = top.getName() + "JsonConverter";
        if (top != struct) {
            name += "$" + struct.getSimpleName() + "JsonConverter";
        }
        return Class.forName(name);
    }

    /** Converter.read(JsonNode, short): Kafka's JSON to Kafka's object. */
    private static Object jsonRead(Class<?> struct, JsonNode json, short version) throws Exception {
        Method read = converterFor(struct).getMethod("read", JsonNode.class, short.class);
        return invoke(read, json, version);
    }

    /** Converter.write(X, short): Kafka's object to Kafka's JSON (records are written as ""). */
    private static JsonNode jsonWrite(Class<?> struct, Object value, short version) throws Exception {
        Method write = converterFor(struct).getMethod("write", struct, short.class);
        return (JsonNode) invoke(write, value, version);
    }

    /** Calls a static method, unwrapping the exception the method itself threw. */
    private static Object invoke(Method method, Object... args) throws Exception {
        try {
            return method.invoke(null, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            throw e;
        }
    }

    // ------------------------------------------------------------------------------------------
    // Wire bytes, exactly as Kafka's network layer makes and reads them
    // ------------------------------------------------------------------------------------------

    /** Serializes a message at a version: addSize() fills the cache that write() then relies on. */
    static byte[] serialize(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = message.size(cache, version);
        ByteBuffer buffer = ByteBuffer.allocate(size);
        message.write(new ByteBufferAccessor(buffer), cache, version);
        if (buffer.hasRemaining()) {
            throw new IllegalStateException("Kafka computed a size of " + size + " bytes but wrote "
                + buffer.position());
        }
        return buffer.array();
    }

    /** Parses a whole buffer as one message at a version; leftover bytes are an error. */
    static Message deserialize(MessageInfo info, byte[] bytes, short version) throws Exception {
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        Message message;
        try {
            message = (Message) info.readConstructor.newInstance(new ByteBufferAccessor(buffer), version);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            throw cause instanceof Exception ? (Exception) cause : e;
        }
        if (buffer.hasRemaining()) {
            throw new IllegalArgumentException(buffer.remaining() + " trailing bytes after "
                + info.name + " v" + version + " (" + buffer.position() + " bytes read)");
        }
        return message;
    }

    // ------------------------------------------------------------------------------------------
    // dump: the wire schema and defaults of every message-version
    // ------------------------------------------------------------------------------------------

    /**
     * The dump document:
     * <pre>
     * {"kafkaVersion": "3.9.1", "kafkaCommitId": "...",
     *  "messageCount": 186, "messageVersionCount": 666,        // every generated message class
     *  "dataClassCount": 179, "dataClassVersionCount": 652,     // those named *Data
     *  "messages": {"MetadataResponse": {"class": "MetadataResponseData", "apiKey": 3,  // -1: not an API
     *                                    "lowestVersion": 0, "highestVersion": 12,
     *                                    "versions": {"0": STRUCT, ..., "12": STRUCT}}, ...}}
     *
     * STRUCT = {"class": "MetadataResponseData$MetadataResponseTopic",
     *           "flexible": true,                 // has a tagged-field section at this version
     *           "fields": [FIELD, ...],           // in wire order, without the tagged ones
     *           "taggedFields": [FIELD, ...],     // ascending tag order (empty when not flexible)
     *           "default": {...}}                 // JsonConverter.write(new X(), version), except
     *                                             // that a null records field is null, not ""
     * FIELD  = {"name": "topic_id",               // Kafka's schema name (snake case)
     *           "json": "topicId",                // the JSON (and Java) name
     *           "tag": 0,                         // tagged fields only
     *           "type": TYPE}
     * TYPE   = {"type": "INT8" | "INT16" | "UINT16" | "INT32" | "UNSIGNED_INT32" | "INT64" | "FLOAT64"
     *                   | "BOOLEAN" | "UUID" | "STRING" | "COMPACT_STRING" | "NULLABLE_STRING"
     *                   | "COMPACT_NULLABLE_STRING" | "BYTES" | "COMPACT_BYTES" | "NULLABLE_BYTES"
     *                   | "COMPACT_NULLABLE_BYTES" | "RECORDS" | "COMPACT_RECORDS",
     *           "nullable": bool}
     *        | {"type": "ARRAY" | "COMPACT_ARRAY", "nullable": bool, "items": TYPE}
     *        | {"type": "STRUCT", "nullable": bool, "struct": STRUCT}
     * </pre>
     */
    static ObjectNode dump() throws Exception {
        ObjectNode root = NODES.objectNode();
        root.put("kafkaVersion", AppInfoParser.getVersion());
        root.put("kafkaCommitId", AppInfoParser.getCommitId());
        ObjectNode messages = NODES.objectNode();
        int versionCount = 0;
        int dataClassCount = 0;         // the subset whose class name ends in "Data"
        int dataClassVersionCount = 0;
        for (String name : messageNames()) {
            MessageInfo info = message(name);
            boolean dataClass = info.dataClass.getSimpleName().endsWith("Data");
            if (dataClass) {
                dataClassCount++;
                dataClassVersionCount += info.highest - info.lowest + 1;
            }
            ObjectNode entry = messages.putObject(name);
            entry.put("class", info.dataClass.getSimpleName());
            Object instance = info.dataClass.getConstructor().newInstance();
            if (instance instanceof ApiMessage) {
                entry.put("apiKey", ((ApiMessage) instance).apiKey());
            } else {
                entry.putNull("apiKey");
            }
            entry.put("lowestVersion", info.lowest);
            entry.put("highestVersion", info.highest);
            ObjectNode versions = entry.putObject("versions");
            for (short v = info.lowest; v <= info.highest; v++) {
                versions.set(Short.toString(v), describeStruct(info.dataClass, info.schemas[v], v));
                versionCount++;
            }
        }
        root.put("messageCount", messages.size());
        root.put("messageVersionCount", versionCount);
        root.put("dataClassCount", dataClassCount);
        root.put("dataClassVersionCount", dataClassVersionCount);
        root.set("messages", messages);
        return root;
    }

    /** Describes one struct (top-level message or nested) at one version; see dump() for the shape. */
    private static ObjectNode describeStruct(Class<?> struct, Schema schema, short version) throws Exception {
        Map<String, java.lang.reflect.Field> javaFields = javaFieldsBySchemaName(struct);
        ObjectNode out = NODES.objectNode();
        out.put("class", struct.getName().substring(PACKAGE.length()));
        ArrayNode fields = NODES.arrayNode();
        ArrayNode tagged = NODES.arrayNode();
        boolean flexible = false;
        for (BoundField bound : schema.fields()) {
            Field field = bound.def;
            if (field.type instanceof TaggedFields) {
                // The "_tagged_fields" section that flexible versions end with.
                flexible = true;
                for (Map.Entry<Integer, Field> e : taggedFieldMap((TaggedFields) field.type).entrySet()) {
                    ObjectNode d = describeField(struct, e.getValue(), version, javaFields);
                    d.put("tag", e.getKey());
                    tagged.add(d);
                }
            } else {
                fields.add(describeField(struct, field, version, javaFields));
            }
        }
        out.put("flexible", flexible);
        out.set("fields", fields);
        out.set("taggedFields", tagged);
        Object fresh = struct.getConstructor().newInstance();
        JsonNode defaults = jsonWrite(struct, fresh, version);
        checkDefaultKeys(struct, version, defaults, fields, tagged);
        // The converter writes every records field as "" when it does not check for null (it does
        // not for non-nullable ones), even though a fresh instance holds null there: record the
        // value the instance really holds.
        for (JsonNode f : fields) {
            String kind = f.get("type").get("type").asText();
            if (kind.endsWith("RECORDS")) {
                java.lang.reflect.Field javaField = javaFields.get(f.get("name").asText());
                javaField.setAccessible(true);
                if (javaField.get(fresh) == null) {
                    ((ObjectNode) defaults).putNull(javaField.getName());
                }
            }
        }
        out.set("default", defaults);
        return out;
    }

    private static ObjectNode describeField(Class<?> owner, Field field, short version,
                                            Map<String, java.lang.reflect.Field> javaFields) throws Exception {
        java.lang.reflect.Field javaField = javaFields.get(field.name);
        if (javaField == null) {
            throw new IllegalStateException(owner.getName() + " v" + version + ": schema field '"
                + field.name + "' has no Java field (known: " + javaFields.keySet() + ")");
        }
        ObjectNode out = NODES.objectNode();
        out.put("name", field.name);
        out.put("json", javaField.getName());
        ObjectNode type = describeType(field.type, javaField.getGenericType(), version);
        if (field.type instanceof Schema || field.type == Type.RECORDS || field.type == Type.COMPACT_RECORDS) {
            // A Schema cannot say whether a struct may be null, and Type.RECORDS calls itself
            // nullable whatever the field says: ask the generated code instead.
            type.put("nullable", mayBeNull(owner, javaField, version));
        }
        out.set("type", type);
        return out;
    }

    private static ObjectNode describeType(Type type, java.lang.reflect.Type javaType, short version)
            throws Exception {
        ObjectNode out = NODES.objectNode();
        if (type instanceof Schema) {
            out.put("type", "STRUCT");
            out.put("nullable", false);  // replaced by describeField's probe
            out.set("struct", describeStruct(rawClass(javaType), (Schema) type, version));
        } else if (type instanceof ArrayOf || type instanceof CompactArrayOf) {
            out.put("type", type instanceof ArrayOf ? "ARRAY" : "COMPACT_ARRAY");
            out.put("nullable", type.isNullable());
            out.set("items", describeType(type.arrayElementType().get(), elementType(javaType), version));
        } else if (type instanceof Type.DocumentedType) {
            out.put("type", ((Type.DocumentedType) type).typeName());
            out.put("nullable", type.isNullable());
        } else {
            throw new IllegalStateException("unexpected schema type " + type.getClass() + ": " + type);
        }
        return out;
    }

    /** TaggedFields keeps its tag-to-field map private; read it, sorted by tag. */
    @SuppressWarnings("unchecked")
    private static TreeMap<Integer, Field> taggedFieldMap(TaggedFields section) throws Exception {
        java.lang.reflect.Field map = TaggedFields.class.getDeclaredField("fields");
        map.setAccessible(true);
        return new TreeMap<>((Map<Integer, Field>) map.get(section));
    }

    /**
     * The instance fields of a generated struct class keyed by their schema names. Kafka names the
     * Java field (and the JSON key) after the spec name with a lower-case first letter
     * ("IsKRaftController" gives "isKRaftController") and the schema field after the spec name in
     * snake case, by the rule of Kafka's generator (MessageGenerator.toSnakeCase: an underscore before
     * an upper-case letter that follows a lower-case one, then lower case: "is_kraft_controller").
     */
    private static Map<String, java.lang.reflect.Field> javaFieldsBySchemaName(Class<?> struct) {
        Map<String, java.lang.reflect.Field> out = new HashMap<>();
        for (java.lang.reflect.Field f : struct.getDeclaredFields()) {
            int mods = f.getModifiers();
            if (Modifier.isStatic(mods) || f.getName().startsWith("_")) {
                continue;  // SCHEMA_n, version bounds, _unknownTaggedFields
            }
            // The spec name is the Java name with its first letter in upper case.
            String specName = Character.toUpperCase(f.getName().charAt(0)) + f.getName().substring(1);
            out.put(toSnakeCase(specName), f);
        }
        return out;
    }

    static String toSnakeCase(String name) {
        StringBuilder out = new StringBuilder();
        boolean prevWasUpper = true;
        for (char c : name.toCharArray()) {
            if (Character.isUpperCase(c)) {
                if (!prevWasUpper) {
                    out.append('_');
                }
                out.append(Character.toLowerCase(c));
                prevWasUpper = true;
            } else {
                out.append(c);
                prevWasUpper = false;
            }
        }
        return out.toString();
    }

    private static Class<?> rawClass(java.lang.reflect.Type type) {
        if (type instanceof Class) {
            return (Class<?>) type;
        }
        if (type instanceof ParameterizedType) {
            return (Class<?>) ((ParameterizedType) type).getRawType();
        }
        throw new IllegalStateException("cannot find the class of " + type);
    }

    /**
     * The element type of a generated array field: List<X>, or a generated XCollection class that
     * extends ImplicitLinkedHashMultiCollection<X> (used for arrays with a mapKey).
     */
    private static java.lang.reflect.Type elementType(java.lang.reflect.Type type) {
        if (type instanceof ParameterizedType) {
            return ((ParameterizedType) type).getActualTypeArguments()[0];
        }
        for (Class<?> c = rawClass(type); c != null; c = c.getSuperclass()) {
            java.lang.reflect.Type sup = c.getGenericSuperclass();
            if (sup instanceof ParameterizedType) {
                return ((ParameterizedType) sup).getActualTypeArguments()[0];
            }
        }
        throw new IllegalStateException("cannot find the element type of " + type);
    }

    /**
     * Whether a struct or records field may be null at a version. Both of Kafka's code paths must
     * accept it: the wire writer must serialize an object whose field is null, and the JsonConverter
     * must read a JSON null into a null field (a non-nullable field fails in either place).
     */
    private static boolean mayBeNull(Class<?> owner, java.lang.reflect.Field field, short version)
            throws Exception {
        field.setAccessible(true);
        // Wire path: set the field to null on a fresh object and serialize it.
        Message direct = (Message) owner.getConstructor().newInstance();
        field.set(direct, null);
        try {
            serialize(direct, version);
        } catch (RuntimeException e) {
            return false;
        }
        // JSON path: the defaults with this field set to null, read back by Kafka's converter.
        ObjectNode json = (ObjectNode) jsonWrite(owner, owner.getConstructor().newInstance(), version);
        json.set(field.getName(), NullNode.instance);
        Object parsed;
        try {
            parsed = jsonRead(owner, json, version);
        } catch (RuntimeException e) {
            return false;
        }
        if (field.get(parsed) != null) {
            return false;
        }
        serialize((Message) parsed, version);
        return true;
    }

    /**
     * A guard on the name mapping: the defaults JSON must hold every untagged field under its JSON
     * name, and nothing else except tagged fields (written only when not at their default).
     */
    private static void checkDefaultKeys(Class<?> struct, short version, JsonNode defaults,
                                         ArrayNode fields, ArrayNode tagged) {
        List<String> expected = new ArrayList<>();
        for (JsonNode f : fields) {
            expected.add(f.get("json").asText());
        }
        List<String> taggedNames = new ArrayList<>();
        for (JsonNode f : tagged) {
            taggedNames.add(f.get("json").asText());
        }
        List<String> actual = new ArrayList<>();
        for (Iterator<String> it = defaults.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!taggedNames.contains(key)) {
                actual.add(key);
            }
        }
        if (!actual.equals(expected)) {
            throw new IllegalStateException(struct.getName() + " v" + version + ": default JSON keys "
                + actual + " differ from schema fields " + expected);
        }
    }

    // ------------------------------------------------------------------------------------------
    // serve: the JSON-lines server
    // ------------------------------------------------------------------------------------------

    static void serve() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode reply;
            try {
                JsonNode request = MAPPER.readTree(line);
                if (request.isArray()) {
                    ArrayNode replies = NODES.arrayNode();
                    for (JsonNode r : request) {
                        replies.add(handle(r));
                    }
                    reply = replies;
                } else {
                    reply = handle(request);
                }
            } catch (JsonProcessingException e) {
                reply = error(e);
            }
            out.write(MAPPER.writeValueAsString(reply));
            out.write('\n');
            out.flush();
        }
    }

    private static JsonNode handle(JsonNode request) {
        try {
            String op = request.path("op").asText();
            switch (op) {
                case "encode":
                    return encode(request);
                case "decode":
                    return decode(request);
                case "reencode":
                    return reencode(request);
                case "frame":
                    return frame(request);
                case "apiKeys":
                    return apiKeys();
                case "dump":
                    return dump();
                default:
                    throw new IllegalArgumentException("unknown op '" + op + "'");
            }
        } catch (Exception | StackOverflowError e) {
            return error(e);
        }
    }

    /** JSON -> Kafka object -> bytes, plus Kafka's own JSON for that object and for its bytes re-read. */
    private static JsonNode encode(JsonNode request) throws Exception {
        MessageInfo info = message(request.path("message").asText());
        short version = version(request);
        info.checkVersion(version);
        JsonNode json = request.get("json");
        if (json == null) {
            throw new IllegalArgumentException("encode request without 'json'");
        }
        Message value = (Message) jsonRead(info.dataClass, json, version);
        byte[] bytes = serialize(value, version);
        ObjectNode reply = NODES.objectNode();
        reply.put("bytes", Base64.getEncoder().encodeToString(bytes));
        reply.set("json", jsonWrite(info.dataClass, value, version));
        reply.set("redecoded", jsonWrite(info.dataClass, deserialize(info, bytes, version), version));
        return reply;
    }

    /** bytes -> Kafka object -> Kafka's JSON. */
    private static JsonNode decode(JsonNode request) throws Exception {
        MessageInfo info = message(request.path("message").asText());
        short version = version(request);
        info.checkVersion(version);
        byte[] bytes = Base64.getDecoder().decode(request.path("bytes").asText());
        ObjectNode reply = NODES.objectNode();
        reply.set("json", jsonWrite(info.dataClass, deserialize(info, bytes, version), version));
        return reply;
    }

    /** bytes -> Kafka object -> bytes again (unknown tagged fields included) and Kafka's JSON. */
    private static JsonNode reencode(JsonNode request) throws Exception {
        MessageInfo info = message(request.path("message").asText());
        short version = version(request);
        info.checkVersion(version);
        byte[] bytes = Base64.getDecoder().decode(request.path("bytes").asText());
        Message value = deserialize(info, bytes, version);
        ObjectNode reply = NODES.objectNode();
        reply.put("bytes", Base64.getEncoder().encodeToString(serialize(value, version)));
        reply.set("json", jsonWrite(info.dataClass, value, version));
        ArrayNode tags = reply.putArray("unknownTags");
        for (RawTaggedField field : value.unknownTaggedFields()) {
            tags.add(field.tag());
        }
        return reply;
    }

    /** A size-prefixed request or response frame, header version chosen by Kafka's ApiKeys. */
    private static JsonNode frame(JsonNode request) throws Exception {
        MessageInfo info = message(request.path("message").asText());
        short version = version(request);
        info.checkVersion(version);
        Message value = (Message) jsonRead(info.dataClass, request.get("json"), version);
        ApiKeys api = ApiKeys.forId(((ApiMessage) value).apiKey());
        int correlationId = request.path("correlationId").asInt();
        Message header;
        short headerVersion;
        if (info.name.endsWith("Request")) {
            JsonNode clientId = request.get("clientId");
            RequestHeader h = new RequestHeader(api, version,
                clientId == null || clientId.isNull() ? null : clientId.asText(), correlationId);
            header = h.data();
            headerVersion = h.headerVersion();
        } else if (info.name.endsWith("Response")) {
            headerVersion = api.responseHeaderVersion(version);
            header = new ResponseHeader(correlationId, headerVersion).data();
        } else {
            throw new IllegalArgumentException(info.name + " is neither a request nor a response");
        }
        ByteBuffer body = RequestUtils.serialize(header, headerVersion, value, version);
        ByteBuffer frame = ByteBuffer.allocate(4 + body.remaining());
        frame.putInt(body.remaining()).put(body);
        ObjectNode reply = NODES.objectNode();
        reply.put("bytes", Base64.getEncoder().encodeToString(frame.array()));
        reply.put("headerVersion", headerVersion);
        return reply;
    }

    /** Kafka's table of APIs: version ranges and the header version of each request and response. */
    private static JsonNode apiKeys() {
        ArrayNode out = NODES.arrayNode();
        for (ApiKeys api : ApiKeys.values()) {
            ObjectNode entry = out.addObject();
            entry.put("apiKey", api.id);
            entry.put("name", api.name);
            entry.put("oldestVersion", api.oldestVersion());
            entry.put("latestVersion", api.latestVersion(true));
            ArrayNode requests = entry.putArray("requestHeaderVersions");
            ArrayNode responses = entry.putArray("responseHeaderVersions");
            for (short v = api.oldestVersion(); v <= api.latestVersion(true); v++) {
                requests.add(api.requestHeaderVersion(v));
                responses.add(api.responseHeaderVersion(v));
            }
        }
        return out;
    }

    private static short version(JsonNode request) {
        JsonNode v = request.get("version");
        if (v == null || !v.canConvertToInt() || v.intValue() < Short.MIN_VALUE || v.intValue() > Short.MAX_VALUE) {
            throw new IllegalArgumentException("request needs an integer 'version'");
        }
        return (short) v.intValue();
    }

    private static ObjectNode error(Throwable e) {
        ObjectNode reply = NODES.objectNode();
        if (e instanceof ClassNotFoundException) {
            reply.put("error", "unknown message (no class " + e.getMessage() + ")");
        } else {
            reply.put("error", e.getClass().getName() + ": " + e.getMessage());
        }
        return reply;
    }
}
