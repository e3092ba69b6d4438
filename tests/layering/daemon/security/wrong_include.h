// Fixture for the "layering_catches" test: a security/ header that includes the server, which
// cmake/check_layers.cmake must refuse. Never compiled.
#include "daemon/server/server.h"
