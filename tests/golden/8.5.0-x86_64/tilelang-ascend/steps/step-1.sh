bash install_ascend.sh
