# Turns a text file into a C string constant (no xxd on every machine): -DIN= -DOUT= -DNAME=
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by ci/cmake/embed_sql.cmake; do not edit */\n"
     "const char ${NAME}[] = {\n${bytes}0x00};\n")
